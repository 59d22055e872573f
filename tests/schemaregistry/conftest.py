"""The control plane's registry in front of a real in-process Weir broker and the suite's real
Redis: the API tests call ``/schema-registry/...`` through Django with DRF's test client (the
same views daphne serves), and the client tests through a live HTTP server. The broker is
shared by a module's tests; each test uses subjects of its own (:func:`subject`), and
:func:`clean_registry` puts the global config and mode back."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from controlplane.cluster import reset_gateways
from schemaregistry.registry import registry, reset_registries
from tests.weir.inprocess import ThreadedBroker, threaded_broker

SETTINGS = ("WEIR_REDIS_URL", "WEIR_CLUSTER_ID", "WEIR_BOOTSTRAP_SERVERS")


@pytest.fixture(scope="module")
def registry_broker(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedBroker]:
    """One broker whose cluster the control plane manages for the module's tests."""
    root: Path = tmp_path_factory.mktemp("registry")
    with threaded_broker(data_dir=root / "broker-1", redis_url=redis_server) as broker:
        previous = {name: getattr(settings, name) for name in SETTINGS}
        settings.WEIR_REDIS_URL = redis_server
        settings.WEIR_CLUSTER_ID = broker.cluster_id
        settings.WEIR_BOOTSTRAP_SERVERS = broker.bootstrap
        try:
            yield broker
        finally:
            reset_registries()
            reset_gateways()
            for name, value in previous.items():
                setattr(settings, name, value)


@pytest.fixture
def clean_registry(registry_broker: ThreadedBroker) -> Iterator[None]:
    """The global compatibility level and mode as a new registry has them, after the test."""
    yield
    found = registry()
    if found.get_mode()["mode"] != "READWRITE":
        found.set_mode(None, "READWRITE")
    if found.get_config()["compatibilityLevel"] != "BACKWARD":
        found.set_config(None, "BACKWARD")


@pytest.fixture
def subject(clean_registry: None) -> str:
    """A subject name no other test uses."""
    return f"orders-{uuid.uuid4().hex[:8]}-value"
