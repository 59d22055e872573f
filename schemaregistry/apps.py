from django.apps import AppConfig


class SchemaRegistryConfig(AppConfig):
    name = "schemaregistry"
    verbose_name = "Schema registry"
