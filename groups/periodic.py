"""Periodic work of the groups app, run by ``manage.py monitor``: lag history upkeep.

Once a minute, samples older than an hour are thinned to one per minute and samples older
than ``WEIR_LAG_HISTORY_DAYS`` are dropped (:func:`groups.services.lag_history_downsample`).
Each run starts where the previous one stopped (an hour before its ``now``), so the work per
run stays one minute of samples however long the history is.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from controlplane.periodic import every
from groups.services import FULL_RESOLUTION, lag_history_downsample

_state: dict[str, datetime | None] = {"done_until": None}


@every(60, name="groups.lag_history_downsample")
def downsample_lag_history() -> None:
    now = timezone.now()
    lag_history_downsample(now=now, since=_state["done_until"])
    _state["done_until"] = now - FULL_RESOLUTION
