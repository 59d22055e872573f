"""The audit log in Django's admin site: searchable, filterable, read-only."""

from typing import Any

from django.contrib import admin

from controlplane.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("at", "username", "method", "path", "status_code", "result")
    list_filter = ("method", "status_code", "action")
    search_fields = ("username", "path", "target", "result")
    date_hierarchy = "at"

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False
