from django.apps import AppConfig


class MirrorsConfig(AppConfig):
    name = "mirrors"
    default_auto_field = "django.db.models.BigAutoField"
