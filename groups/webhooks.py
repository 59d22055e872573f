"""Webhook alerts: a group's status changed → a JSON POST to each matching target.

A target (:class:`~groups.models.WebhookConfig`) matches a change when it is enabled, names
the group or no group, and the change involves a status at least as bad as its
``min_status`` (going to it, or recovering from it). The body is::

    {"group", "status", "previous_status", "total_lag",
     "worst_partitions": [{topic, partition, lag, lag_seconds, status}] (top 5 by lag), "at"}

With a ``secret`` the request carries ``X-Weir-Signature: sha256=<hex HMAC-SHA256 of the
body>`` (GitHub's convention), so the receiver can check it came from Weir. Deliveries run in
a daemon thread with a short timeout, so a slow or dead receiver never delays the monitor's
tick; each target records its last delivery's time, HTTP status and error.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from django.db import close_old_connections, connections
from django.db.models import Q
from django.utils import timezone

from groups.models import WebhookConfig

if TYPE_CHECKING:
    from groups.monitor import GroupLag

__all__ = ["DELIVERY_TIMEOUT_S", "alert_body", "deliver", "notify_status_change", "signature"]

log = logging.getLogger("weir.webhooks")

DELIVERY_TIMEOUT_S = 5.0
_RANK = {"NOTFOUND": 0, "OK": 1, "WARN": 2, "ERR": 3}


def alert_body(*, group: GroupLag, previous_status: str) -> dict[str, Any]:
    worst = sorted(group.partitions, key=lambda p: (-p.lag, p.topic, p.partition))[:5]
    return {
        "group": group.group,
        "status": group.status,
        "previous_status": previous_status,
        "total_lag": group.total_lag,
        "worst_partitions": [
            {
                "topic": p.topic,
                "partition": p.partition,
                "lag": p.lag,
                "lag_seconds": p.lag_seconds,
                "status": p.status,
            }
            for p in worst
        ],
        "at": group.message()["at"],
    }


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def matching(*, group: str, status: str, previous_status: str) -> list[WebhookConfig]:
    severity = max(_RANK.get(status, 0), _RANK.get(previous_status, 0))
    configs = WebhookConfig.objects.filter(Q(group="") | Q(group=group), enabled=True)
    return [c for c in configs if severity >= _RANK.get(c.min_status, 2)]


def notify_status_change(*, group: GroupLag, previous_status: str) -> threading.Thread | None:
    """Send the alert to every matching target in the background; the thread (or None)."""
    targets = [
        (c.id, c.url, c.secret)
        for c in matching(group=group.group, status=group.status, previous_status=previous_status)
    ]
    if not targets:
        return None
    body = json.dumps(alert_body(group=group, previous_status=previous_status)).encode()
    thread = threading.Thread(
        target=_deliver_all, args=(targets, body), name="weir-webhooks", daemon=True
    )
    thread.start()
    return thread


def deliver(url: str, body: bytes, *, secret: str = "") -> tuple[int | None, str]:
    """POST ``body``; (HTTP status or None, error text)."""
    headers = {"Content-Type": "application/json", "User-Agent": "weir-monitor"}
    if secret:
        headers["X-Weir-Signature"] = signature(secret, body)
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=DELIVERY_TIMEOUT_S) as response:
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, f"HTTP {exc.code} {exc.reason}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return None, str(getattr(exc, "reason", exc))


def _deliver_all(targets: list[tuple[int, str, str]], body: bytes) -> None:
    try:
        for config_id, url, secret in targets:
            status, error = deliver(url, body, secret=secret)
            if error:
                log.warning("webhook %d (%s) failed: %s", config_id, url, error)
            WebhookConfig.objects.filter(id=config_id).update(
                last_delivery_at=timezone.now(),
                last_delivery_status=status,
                last_delivery_error=error,
            )
    except Exception:  # a background thread has nobody to raise to
        log.exception("webhook delivery failed")
    finally:
        close_old_connections()
        connections.close_all()
