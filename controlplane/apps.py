from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ControlplaneConfig(AppConfig):
    """The project package is also an app: users' roles, tokens and the audit log live here."""

    name = "controlplane"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the OpenAPI extension for our Basic authentication class.
        from controlplane import openapi  # noqa: F401
        from controlplane.jobs import ensure_default_schedules

        # Default job schedules once the tables exist (never overwriting an operator's edit).
        post_migrate.connect(ensure_default_schedules, sender=self)
