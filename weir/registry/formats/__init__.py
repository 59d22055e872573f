"""Schema formats and compatibility levels (Confluent Schema Registry's rules).

:func:`parse` and :func:`check` are what the registry calls; each format lives in a module
of its own behind :class:`~weir.registry.formats.base.SchemaFormat` (``avro``,
``jsonschema``, ``protobuf``), loaded on first use so a process that never sees a Protobuf
schema never imports protobuf's compiler.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from weir.registry.formats.base import (
    Direction,
    InvalidSchema,
    ParsedSchema,
    ResolvedReference,
    SchemaFormat,
)

__all__ = [
    "COMPATIBILITY_LEVELS",
    "SCHEMA_TYPES",
    "InvalidSchema",
    "ParsedSchema",
    "ResolvedReference",
    "check",
    "parse",
    "schema_format",
]

# The API's schemaType values and the module that implements each (AVRO is the default when
# a request names none, as in Confluent's API).
SCHEMA_TYPES: dict[str, str] = {
    "AVRO": "weir.registry.formats.avro",
    "JSON": "weir.registry.formats.jsonschema",
    "PROTOBUF": "weir.registry.formats.protobuf",
}
COMPATIBILITY_LEVELS = (
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
)
_formats: dict[str, SchemaFormat] = {}


def schema_format(schema_type: str) -> SchemaFormat:
    """The format for an API ``schemaType``; :class:`InvalidSchema` for one Weir lacks."""
    if schema_type not in SCHEMA_TYPES:
        known = ", ".join(SCHEMA_TYPES)
        raise InvalidSchema(f"unknown schema type {schema_type!r} (known: {known})")
    if schema_type not in _formats:
        module = importlib.import_module(SCHEMA_TYPES[schema_type])
        _formats[schema_type] = module.FORMAT
    return _formats[schema_type]


def parse(
    schema_type: str, text: str, references: Sequence[ResolvedReference] = ()
) -> ParsedSchema:
    """The schema ``text`` of ``schema_type`` means, or :class:`InvalidSchema`."""
    return schema_format(schema_type).parse(text, references)


def check(level: str, new: ParsedSchema, previous: Sequence[ParsedSchema]) -> list[str]:
    """Why ``new`` may not follow ``previous`` (a subject's live versions, oldest first) at
    compatibility ``level``; empty when it may. Non-transitive levels compare with the newest
    version only; a schema of another type than the one it follows is always incompatible."""
    if level not in COMPATIBILITY_LEVELS:
        raise ValueError(f"unknown compatibility level {level!r}")
    if level == "NONE" or not previous:
        return []
    against = list(previous) if level.endswith("_TRANSITIVE") else [previous[-1]]
    base = level.removesuffix("_TRANSITIVE")
    directions = {
        "BACKWARD": (Direction.BACKWARD,),
        "FORWARD": (Direction.FORWARD,),
        "FULL": (Direction.BACKWARD, Direction.FORWARD),
    }[base]
    messages: list[str] = []
    for old in reversed(against):  # newest first, as Confluent reports them
        if old.schema_type != new.schema_type:
            messages.append(
                f"Incompatible schema type: {new.schema_type} cannot follow {old.schema_type}"
            )
            continue
        fmt = schema_format(new.schema_type)
        for direction in directions:
            messages.extend(fmt.check(new, old, direction))
    return messages
