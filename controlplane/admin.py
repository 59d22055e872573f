"""The audit log and the job records in Django's admin site: searchable, filterable,
read-only (job schedules are django-celery-beat's own admin pages)."""

from typing import Any

from django.contrib import admin

from controlplane.models import AnalyticsResult, AuditEntry, Job


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records written by the system, never by hand."""

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ("at", "username", "method", "path", "status_code", "result")
    list_filter = ("method", "status_code", "action")
    search_fields = ("username", "path", "target", "result")
    date_hierarchy = "at"


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "status", "scheduled_by", "started_at", "finished_at", "progress")
    list_filter = ("kind", "status")
    search_fields = ("name", "scheduled_by", "error")
    date_hierarchy = "created_at"


@admin.register(AnalyticsResult)
class AnalyticsResultAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "job", "created_at")
    list_filter = ("name",)
