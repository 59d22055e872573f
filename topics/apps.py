from django.apps import AppConfig


class TopicsConfig(AppConfig):
    name = "topics"
    default_auto_field = "django.db.models.BigAutoField"
