"""The control plane's own records: the audit log (users, groups and tokens are Django's)."""

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
