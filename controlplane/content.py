"""Confluent REST Proxy's content types, as DRF parsers and renderers.

REST Proxy v2 clients send and expect ``application/vnd.kafka[.<embedded>].v2+json``: the
embedded format (``json``, ``binary``) says how record keys and values are written inside the
JSON body. All of them are JSON on the wire, so each parser is DRF's JSON parser under another
media type, and each renderer is DRF's JSON renderer answering with that type. v3 and ``/api/``
speak plain ``application/json``.
"""

from __future__ import annotations

from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer

__all__ = [
    "KAFKA_V2_RENDERERS",
    "KafkaBinaryV2JsonParser",
    "KafkaBinaryV2JsonRenderer",
    "KafkaJsonParser",
    "KafkaJsonV2JsonParser",
    "KafkaJsonV2JsonRenderer",
    "KafkaV2JsonParser",
    "KafkaV2JsonRenderer",
    "embedded_format",
]


class KafkaV2JsonParser(JSONParser):
    media_type = "application/vnd.kafka.v2+json"


class KafkaJsonParser(JSONParser):
    media_type = "application/vnd.kafka+json"


class KafkaJsonV2JsonParser(JSONParser):
    media_type = "application/vnd.kafka.json.v2+json"


class KafkaBinaryV2JsonParser(JSONParser):
    media_type = "application/vnd.kafka.binary.v2+json"


class KafkaV2JsonRenderer(JSONRenderer):
    media_type = "application/vnd.kafka.v2+json"


class KafkaJsonV2JsonRenderer(JSONRenderer):
    media_type = "application/vnd.kafka.json.v2+json"


class KafkaBinaryV2JsonRenderer(JSONRenderer):
    media_type = "application/vnd.kafka.binary.v2+json"


class _KafkaJsonRenderer(JSONRenderer):
    media_type = "application/vnd.kafka+json"


# Renderers for v2 views: Confluent answers application/vnd.kafka.v2+json unless the client
# asks for plain JSON.
KAFKA_V2_RENDERERS = [KafkaV2JsonRenderer, _KafkaJsonRenderer, JSONRenderer]

# Parsers for v2 request bodies.
KAFKA_V2_PARSERS = [
    KafkaV2JsonParser,
    KafkaJsonParser,
    KafkaJsonV2JsonParser,
    KafkaBinaryV2JsonParser,
    JSONParser,
]


def embedded_format(content_type: str) -> str | None:
    """``json`` / ``binary`` / ... from ``application/vnd.kafka.<fmt>.v2+json``; else None."""
    media = content_type.split(";", 1)[0].strip().lower()
    prefix = "application/vnd.kafka."
    if not media.startswith(prefix) or not media.endswith(".v2+json"):
        return None
    middle = media[len(prefix) : -len(".v2+json")]
    return middle or None
