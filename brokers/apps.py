from django.apps import AppConfig


class BrokersConfig(AppConfig):
    """The control plane's brokers app: REST resources, operations API and management commands."""

    name = "brokers"
    default_auto_field = "django.db.models.BigAutoField"
