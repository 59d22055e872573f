from django.apps import AppConfig


class ControlplaneConfig(AppConfig):
    """The project package is also an app: users' roles, tokens and the audit log live here."""

    name = "controlplane"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the OpenAPI extension for our Basic authentication class.
        from controlplane import openapi  # noqa: F401
