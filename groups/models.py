"""Lag history and webhook configuration.

``LagSample`` is one partition of one group at one monitor tick (committed offset, high
watermark, lag in offsets and seconds); ``GroupStatusSample`` is the group's Burrow status at
that tick. The monitor writes both with ``bulk_create``; the ``downsample`` periodic task keeps
full resolution for the last hour, one sample per minute before that, and nothing beyond
``WEIR_LAG_HISTORY_DAYS``. Both are indexed for "this group between these times".

``WebhookConfig`` is an alert target: an URL that receives a JSON POST when a group's status
changes to (or from) one at least as bad as ``min_status``.
"""

from __future__ import annotations

from django.db import models

STATUS_CHOICES = [(s, s) for s in ("OK", "WARN", "ERR")]
PARTITION_STATUS_CHOICES = [(s, s) for s in ("OK", "WARN", "STOP", "STALL", "REWIND")]


class LagSample(models.Model):
    """One partition's lag at one instant."""

    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=249)
    partition = models.IntegerField()
    at = models.DateTimeField()
    committed_offset = models.BigIntegerField()
    high_watermark = models.BigIntegerField()
    lag = models.BigIntegerField()
    lag_seconds = models.FloatField()
    status = models.CharField(max_length=8, choices=PARTITION_STATUS_CHOICES, default="OK")

    class Meta:
        indexes = [
            models.Index(fields=["group", "at"], name="lag_group_at"),
            models.Index(fields=["at"], name="lag_at"),
        ]
        ordering = ["at", "topic", "partition"]

    def __str__(self) -> str:
        return f"{self.group} {self.topic}-{self.partition} @ {self.at:%H:%M:%S}: {self.lag}"


class GroupStatusSample(models.Model):
    """One group's Burrow status and total lag at one instant."""

    group = models.CharField(max_length=255)
    at = models.DateTimeField()
    status = models.CharField(max_length=8, choices=STATUS_CHOICES)
    total_lag = models.BigIntegerField()
    max_lag_seconds = models.FloatField(default=0.0)

    class Meta:
        indexes = [
            models.Index(fields=["group", "at"], name="status_group_at"),
            models.Index(fields=["at"], name="status_at"),
        ]
        ordering = ["at"]

    def __str__(self) -> str:
        return f"{self.group} @ {self.at:%H:%M:%S}: {self.status}"


class WebhookConfig(models.Model):
    """Where to POST a group's status changes (all groups when ``group`` is blank)."""

    url = models.URLField(max_length=1000)
    group = models.CharField(max_length=255, blank=True, default="")
    min_status = models.CharField(max_length=8, choices=STATUS_CHOICES, default="WARN")
    enabled = models.BooleanField(default=True)
    secret = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_delivery_at = models.DateTimeField(null=True, blank=True)
    last_delivery_status = models.IntegerField(null=True, blank=True)
    last_delivery_error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"webhook {self.id} → {self.url}"
