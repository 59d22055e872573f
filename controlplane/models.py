"""The control plane's own records: the audit log, jobs and analytics results (users, groups
and tokens are Django's; schedules are django-celery-beat's)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEntry(models.Model):
    """One mutating API call: who, what, when, and how it ended."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    username = models.CharField(max_length=150, blank=True)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    action = models.CharField(max_length=200, help_text="the route's name, e.g. topics-create")
    target = models.CharField(max_length=500, blank=True, help_text="resources named by the URL")
    request_body = models.TextField(blank=True)
    status_code = models.PositiveSmallIntegerField()
    result = models.TextField(blank=True, help_text="the error message, or a summary")
    remote_addr = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"

    @property
    def succeeded(self) -> bool:
        return self.status_code < 400

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.username or '-'} {self.method} {self.path}"


class Job(models.Model):
    """One run of a retention, compaction, analytics, metadata export or DLQ replay job: who
    asked, when, how far, what it did. Celery tasks write it as they go, so its progress is
    visible while it runs."""

    class Kind(models.TextChoices):
        RETENTION = "retention"
        COMPACTION = "compaction"
        ANALYTICS = "analytics"
        METADATA_EXPORT = "metadata-export"
        DLQ_REPLAY = "dlq-replay"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    name = models.CharField(
        max_length=100, help_text="retention, compaction, analytics:<job>, metadata-export"
    )
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    scheduled_by = models.CharField(
        max_length=200, help_text="beat:<schedule>, user:<username> or cli"
    )
    params = models.JSONField(default=dict, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="the Celery worker running it")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progress = models.FloatField(default=0.0, help_text="0 to 1")
    message = models.CharField(max_length=500, blank=True, help_text="the current step")
    bytes_reclaimed = models.BigIntegerField(default=0)
    rows_produced = models.BigIntegerField(default=0)
    error = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["kind", "-created_at"], name="job_kind_created")]

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)

    def __str__(self) -> str:
        return f"job {self.pk} {self.name} ({self.status})"


class AnalyticsResult(models.Model):
    """What one analytics run produced: headline figures (``summary``) and chart series."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="results")
    name = models.CharField(max_length=100, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    summary = models.JSONField(default=dict)
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} from job {self.job_id}"
