"""Confluent Schema Registry's media types.

Clients send ``application/vnd.schemaregistry.v1+json`` (confluent-kafka, the Java client),
``application/vnd.schemaregistry+json``, ``application/json`` or, from old tools,
``application/octet-stream``; all carry JSON. Answers are
``application/vnd.schemaregistry.v1+json`` unless the client asks only for plain JSON.

``?format=`` is Confluent's: the form a schema is answered in (``serialized``, ``resolved``;
confluent-kafka's Protobuf serde asks for ``serialized``). DRF would take it as a renderer
override and answer 404, so the registry's negotiation picks renderers by Accept alone.
"""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer

__all__ = [
    "REGISTRY_MEDIA_TYPE",
    "RegistryJsonParser",
    "RegistryJsonRenderer",
    "RegistryNegotiation",
]

REGISTRY_MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"


class RegistryJsonParser(JSONParser):
    media_type = REGISTRY_MEDIA_TYPE


class RegistryGenericJsonParser(JSONParser):
    media_type = "application/vnd.schemaregistry+json"


class OctetStreamJsonParser(JSONParser):
    """Confluent's API accepts JSON sent as ``application/octet-stream`` (curl's habit)."""

    media_type = "application/octet-stream"


class RegistryJsonRenderer(JSONRenderer):
    media_type = REGISTRY_MEDIA_TYPE
    format = "schemaregistry"


class GenericRegistryJsonRenderer(JSONRenderer):
    media_type = "application/vnd.schemaregistry+json"
    format = "schemaregistry-generic"


PARSERS = [RegistryJsonParser, RegistryGenericJsonParser, JSONParser, OctetStreamJsonParser]
# The first is the answer to "*/*" and to a request without Accept.
RENDERERS = [RegistryJsonRenderer, GenericRegistryJsonRenderer, JSONRenderer]


class RegistryNegotiation(DefaultContentNegotiation):
    """Renderers by Accept only: ``?format=`` is the schema's format, not a renderer's."""

    def filter_renderers(self, renderers: list[Any], format: str) -> list[Any]:
        return renderers
