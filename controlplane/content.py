"""Confluent REST Proxy's content types, as DRF parsers and renderers.

REST Proxy v2 clients send and expect ``application/vnd.kafka[.<embedded>].v2+json``: the
embedded format (``json``, ``binary``, and with the Schema Registry ``avro``, ``jsonschema``,
``protobuf``) says how record keys and values are written inside the JSON body. All of them
are JSON on the wire, so each parser is DRF's JSON parser under another media type, and each
renderer is DRF's JSON renderer answering with that type. v3 and ``/api/``
speak plain ``application/json``.
"""

from __future__ import annotations

from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer

__all__ = [
    "KAFKA_V2_RENDERERS",
    "SCHEMA_V2_PARSERS",
    "SCHEMA_V2_RENDERERS",
    "KafkaBinaryV2JsonParser",
    "KafkaBinaryV2JsonRenderer",
    "KafkaJsonParser",
    "KafkaJsonV2JsonParser",
    "KafkaJsonV2JsonRenderer",
    "KafkaV2JsonParser",
    "KafkaV2JsonRenderer",
    "embedded_format",
    "v2_renderer",
]


_V2 = "application/vnd.kafka.v2+json"
_PLAIN = "application/vnd.kafka+json"
_JSON_V2 = "application/vnd.kafka.json.v2+json"
_BINARY_V2 = "application/vnd.kafka.binary.v2+json"


def _parser(name: str, media_type: str) -> type[JSONParser]:
    """DRF's JSON parser under ``media_type``."""
    return type(name, (JSONParser,), {"media_type": media_type, "__module__": __name__})


def _renderer(name: str, media_type: str) -> type[JSONRenderer]:
    """DRF's JSON renderer answering ``media_type``."""
    return type(name, (JSONRenderer,), {"media_type": media_type, "__module__": __name__})


KafkaV2JsonParser = _parser("KafkaV2JsonParser", _V2)
KafkaJsonParser = _parser("KafkaJsonParser", _PLAIN)
KafkaJsonV2JsonParser = _parser("KafkaJsonV2JsonParser", _JSON_V2)
KafkaBinaryV2JsonParser = _parser("KafkaBinaryV2JsonParser", _BINARY_V2)
KafkaV2JsonRenderer = _renderer("KafkaV2JsonRenderer", _V2)
KafkaJsonV2JsonRenderer = _renderer("KafkaJsonV2JsonRenderer", _JSON_V2)
KafkaBinaryV2JsonRenderer = _renderer("KafkaBinaryV2JsonRenderer", _BINARY_V2)
_KafkaJsonRenderer = _renderer("_KafkaJsonRenderer", _PLAIN)

# The Schema Registry's embedded formats: a parser and a renderer for each.
SCHEMA_FORMATS = ("avro", "jsonschema", "protobuf")
SCHEMA_V2_PARSERS = [
    _parser(f"Kafka{fmt.title()}V2JsonParser", f"application/vnd.kafka.{fmt}.v2+json")
    for fmt in SCHEMA_FORMATS
]
SCHEMA_V2_RENDERERS = [
    _renderer(f"Kafka{fmt.title()}V2JsonRenderer", f"application/vnd.kafka.{fmt}.v2+json")
    for fmt in SCHEMA_FORMATS
]

# Renderers for v2 views: Confluent answers application/vnd.kafka.v2+json unless the client
# asks for plain JSON.
KAFKA_V2_RENDERERS = [KafkaV2JsonRenderer, _KafkaJsonRenderer, JSONRenderer]

# Parsers for v2 request bodies.
KAFKA_V2_PARSERS = [
    KafkaV2JsonParser,
    KafkaJsonParser,
    KafkaJsonV2JsonParser,
    KafkaBinaryV2JsonParser,
    *SCHEMA_V2_PARSERS,
    JSONParser,
]


def v2_renderer(fmt: str) -> type[JSONRenderer]:
    """The renderer answering records of the embedded format ``fmt``."""
    media_type = f"application/vnd.kafka.{fmt}.v2+json"
    for renderer in (KafkaJsonV2JsonRenderer, KafkaBinaryV2JsonRenderer, *SCHEMA_V2_RENDERERS):
        if renderer.media_type == media_type:
            return renderer
    raise ValueError(f"no renderer for the embedded format {fmt!r}")


def embedded_format(content_type: str) -> str | None:
    """``json`` / ``binary`` / ... from ``application/vnd.kafka.<fmt>.v2+json``; else None."""
    media = content_type.split(";", 1)[0].strip().lower()
    prefix = "application/vnd.kafka."
    if not media.startswith(prefix) or not media.endswith(".v2+json"):
        return None
    middle = media[len(prefix) : -len(".v2+json")]
    return middle or None
