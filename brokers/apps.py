from django.apps import AppConfig


class BrokersConfig(AppConfig):
    """The broker runtime as a Django app, so its management commands are found."""

    name = "brokers"
    default_auto_field = "django.db.models.BigAutoField"
