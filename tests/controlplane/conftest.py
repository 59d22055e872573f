"""The control-plane fixtures live in ``tests.controlplane_fixtures`` (shared with the
dashboard's browser tests, so both use one cluster); names tests import come from there."""

from tests.controlplane_fixtures import PASSWORD, basic

__all__ = ["PASSWORD", "basic"]
