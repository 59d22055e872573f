"""What every schema format gives the registry: parse, canonical text, normalisation, and the
compatibility check between a new schema and a subject's earlier ones.

The registry (``weir.registry``) never looks inside a schema: it asks the format. A format
module (``avro``, ``jsonschema``, ``protobuf``) provides a :class:`SchemaFormat` whose
``parse`` turns the text a client sent (plus the schemas its references name, already
parsed) into a :class:`ParsedSchema`, or raises :class:`InvalidSchema` with a message that says
what is wrong (the API answers it as 422, error code 42201). ``check`` compares a new schema
with earlier ones under Confluent's rules for that format and returns every incompatibility
found as a readable message (the API's ``?verbose=true`` list); an empty list means
compatible.

Direction, as Confluent defines it: BACKWARD means the new schema can read data written with
the old one (new = reader, old = writer); FORWARD means the old schema can read data written
with the new one; FULL means both. The ``*_TRANSITIVE`` levels check against every earlier
version, the others against the newest only (:func:`weir.registry.formats.check` chooses
which versions to pass; a format's ``check`` is always one new schema against one old one).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

__all__ = [
    "Direction",
    "InvalidSchema",
    "ParsedSchema",
    "ResolvedReference",
    "SchemaFormat",
]


class InvalidSchema(ValueError):
    """The schema text (or one of its references) is not a valid schema of its type; the
    message says what is wrong and where."""


class Direction:
    """Which way data flows in one compatibility check."""

    BACKWARD = "BACKWARD"  # the new schema reads what the old one wrote
    FORWARD = "FORWARD"  # the old schema reads what the new one writes


@dataclass(frozen=True, slots=True)
class ResolvedReference:
    """A schema reference (``{"name", "subject", "version"}`` in the API) with the schema it
    names, already parsed. ``name`` is what the referring schema calls it: an Avro full name,
    a JSON Schema ``$ref`` URL, a Protobuf import path."""

    name: str
    subject: str
    version: int
    schema: ParsedSchema


class ParsedSchema(abc.ABC):
    """One valid schema of one format, with its resolved references."""

    schema_type: ClassVar[str]  # "AVRO", "JSON" or "PROTOBUF", as the API spells it

    def __init__(self, references: Sequence[ResolvedReference] = ()) -> None:
        self.references = tuple(references)

    @abc.abstractmethod
    def canonical(self) -> str:
        """The text the registry stores and returns as ``schema``: Confluent's canonical
        string for the format (Avro: compact JSON in the schema's own field order; JSON
        Schema: compact JSON; Protobuf: the ``.proto`` text)."""

    @abc.abstractmethod
    def normalized(self) -> ParsedSchema:
        """The schema Confluent's ``?normalize=true`` stores: equal for schemas that differ
        only in ways the format says do not matter (Avro: Parsing Canonical Form plus
        logical types and defaults kept; JSON: sorted keys; Protobuf: sorted options,
        fully qualified type names...)."""

    def identity(self) -> tuple[str, str, tuple[tuple[str, str, int], ...]]:
        """What makes two registrations "the same schema" (one global id): type, canonical
        text and the references by name, subject and version."""
        refs = tuple((r.name, r.subject, r.version) for r in self.references)
        return (self.schema_type, self.canonical(), refs)

    def formatted(self, fmt: str) -> str:
        """The schema in an output format a client may ask for with ``?format=``
        (Protobuf: ``serialized`` is a base64 ``FileDescriptorProto``); the canonical text
        for any format this schema type does not know, as Confluent does."""
        return self.canonical()


class SchemaFormat(abc.ABC):
    """A schema type the registry serves."""

    schema_type: ClassVar[str]

    @abc.abstractmethod
    def parse(self, text: str, references: Sequence[ResolvedReference] = ()) -> ParsedSchema:
        """The schema ``text`` means, or :class:`InvalidSchema`."""

    @abc.abstractmethod
    def check(self, new: ParsedSchema, old: ParsedSchema, direction: str) -> list[str]:
        """Every reason why data written with one schema cannot be read with the other
        (``direction`` from :class:`Direction`), as Confluent words them; empty when none."""
