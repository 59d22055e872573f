"""AVRO: Apache ``avro`` parses and validates, Weir adds what a registry needs on top.

Parsing. The text must be JSON; Apache ``avro`` (the reference implementation's Python
port) builds the schema and rejects what the specification forbids: unknown or undefined
type names, records or enums without a name, invalid names, duplicate fields, duplicate
enum symbols or union branches, nested unions, fixed types without a size. Java Avro, which
Confluent runs, ignores a logical type it does not know (or a decimal with a bad precision)
and keeps the annotation as a plain property; ``avro`` warns and does the same, so its
warnings are silenced. ``avro`` does not check field defaults; Confluent does for every new
schema, so :func:`_check_defaults` does (a union default may match any branch, as in Java
Avro 1.11+).

References. A referenced schema's named types are known to the referring schema by full
name (Confluent's Avro references: the reference's ``name`` is that full name). Their parsed
objects are put into the parser's name table before the schema is parsed, so
``{"type": "com.acme.Address"}`` resolves to the referenced record, and the stored form
refers to them by name instead of copying them in.

Text. :mod:`weir.registry.formats._avro_text` writes the stored form (Java Avro's
``toString``, which Confluent stores) and the normalized form; compatibility is
:mod:`weir.registry.formats._avro_compat`'s reader/writer resolution.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import avro.errors
from avro import schema as avs
from avro.name import Names

from weir.registry.formats import _avro_compat, _avro_text
from weir.registry.formats.base import (
    Direction,
    InvalidSchema,
    ParsedSchema,
    ResolvedReference,
    SchemaFormat,
)

__all__ = ["FORMAT", "AvroFormat", "AvroSchema"]

_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


class AvroSchema(ParsedSchema):
    """A parsed Avro schema: the client's JSON, ``avro``'s objects and the references."""

    schema_type: ClassVar[str] = "AVRO"

    def __init__(
        self, node: object, schema: avs.Schema, references: Sequence[ResolvedReference] = ()
    ) -> None:
        super().__init__(references)
        self.node = node
        self.schema = schema
        self._canonical: str | None = None

    @property
    def known_names(self) -> dict[str, avs.NamedSchema]:
        """The named types the references bring in (transitively), by full name."""
        return _referenced_names(self.references)

    def canonical(self) -> str:
        if self._canonical is None:
            data = _avro_text.stored_json(self.node, self.schema, self.known_names)
            self._canonical = _avro_text.dumps(data)
        return self._canonical

    def normalized(self) -> AvroSchema:
        data = _avro_text.normalized_json(self.node, self.schema, self.known_names)
        references = sorted(set(self.references), key=lambda r: (r.name, r.subject, r.version))
        return FORMAT.parse(_avro_text.dumps(data), references)


class AvroFormat(SchemaFormat):
    """Apache Avro schemas (``schemaType`` AVRO, the registry's default)."""

    schema_type: ClassVar[str] = "AVRO"

    def parse(self, text: str, references: Sequence[ResolvedReference] = ()) -> AvroSchema:
        try:
            node = json.loads(text)
        except ValueError as e:
            raise InvalidSchema(f"Invalid schema: not JSON: {e}") from e
        for ref in references:
            if not isinstance(ref.schema, AvroSchema):
                raise InvalidSchema(
                    f"Invalid schema: reference {ref.name!r} ({ref.subject} version "
                    f"{ref.version}) is {ref.schema.schema_type}, not AVRO"
                )
        names = Names()
        names.names.update(_referenced_names(references))
        try:
            with warnings.catch_warnings():
                # Unknown logical types are kept as plain properties, as Java Avro does.
                warnings.simplefilter("ignore", avro.errors.IgnoredLogicalType)
                schema = avs.make_avsc_object(node, names)
        except (avro.errors.AvroException, TypeError, AttributeError) as e:
            raise InvalidSchema(f"Invalid schema: {_explain(e)}") from e
        _check_defaults(schema)
        return AvroSchema(node, schema, references)

    def check(self, new: ParsedSchema, old: ParsedSchema, direction: str) -> list[str]:
        assert isinstance(new, AvroSchema) and isinstance(old, AvroSchema)
        if direction == Direction.BACKWARD:
            found = _avro_compat.incompatibilities(new.schema, old.schema)
            return [_avro_compat.describe(f, reader="new", writer="old") for f in found]
        found = _avro_compat.incompatibilities(old.schema, new.schema)
        return [_avro_compat.describe(f, reader="old", writer="new") for f in found]


FORMAT = AvroFormat()


def _referenced_names(references: Sequence[ResolvedReference]) -> dict[str, avs.NamedSchema]:
    """Full name -> parsed named type for every type the references define, their own
    references included."""
    out: dict[str, avs.NamedSchema] = {}
    for ref in references:
        assert isinstance(ref.schema, AvroSchema)
        out.update(_referenced_names(ref.schema.references))
        for named in _named_types(ref.schema.schema, set()):
            out[str(named.fullname)] = named
    return out


def _named_types(schema: avs.Schema, seen: set[int]) -> Iterator[avs.NamedSchema]:
    if id(schema) in seen:
        return
    seen.add(id(schema))
    if isinstance(schema, avs.NamedSchema):
        yield schema
    children: list[avs.Schema] = []
    if isinstance(schema, avs.RecordSchema):
        children = [f.type for f in schema.fields]
    elif isinstance(schema, avs.UnionSchema):
        children = list(schema.schemas)
    elif isinstance(schema, avs.ArraySchema):
        children = [schema.items]
    elif isinstance(schema, avs.MapSchema):
        children = [schema.values]
    for child in children:
        yield from _named_types(child, seen)


_UNKNOWN = re.compile(r"Could not make an Avro Schema object from (\S+)")


def _explain(error: Exception) -> str:
    """``avro``'s message, with the one that matters most said plainly."""
    text = str(error)
    unknown = _UNKNOWN.findall(text)
    if unknown:
        return (
            f"unknown type {unknown[-1]!r}: not a primitive type, not defined before its use "
            "in the schema (names resolve in the enclosing namespace) and not in its references"
        )
    if text.startswith("Name None must be a string"):
        return 'a named type (record, enum or fixed) has no "name"'
    return text


def _check_defaults(schema: avs.Schema) -> None:
    """:class:`InvalidSchema` for the first field whose default its type cannot hold."""
    for record in _named_types(schema, set()):
        if not isinstance(record, avs.RecordSchema):
            continue
        for field in record.fields:
            if field.has_default and not _default_fits(field.type, field.default):
                raise InvalidSchema(
                    f"Invalid schema: invalid default for field {field.name!r} of "
                    f"{record.fullname}: {json.dumps(field.default)} is not a valid "
                    f"{_type_name(field.type)}"
                )


def _type_name(schema: avs.Schema) -> str:
    if isinstance(schema, avs.UnionSchema):
        return "[" + ", ".join(_type_name(s) for s in schema.schemas) + "]"
    return str(schema.fullname) if isinstance(schema, avs.NamedSchema) else schema.type


def _default_fits(schema: avs.Schema, value: Any) -> bool:
    """Whether ``value`` (JSON, as written in a schema) is a valid default for ``schema``,
    by the specification's JSON encoding of defaults (bytes and fixed as strings)."""
    kind = schema.type
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("int", "long"):
        low, high = _INT_RANGE if kind == "int" else _LONG_RANGE
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    if kind in ("float", "double"):
        if isinstance(value, str):  # Java accepts "NaN" and "Infinity" as float defaults
            return value in ("NaN", "Infinity", "-Infinity")
        return (
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        )
    if kind in ("string", "bytes"):
        return isinstance(value, str)
    if isinstance(schema, avs.FixedSchema):
        return isinstance(value, str) and len(value) == schema.size
    if isinstance(schema, avs.EnumSchema):
        return value in schema.symbols
    if isinstance(schema, avs.ArraySchema):
        return isinstance(value, list) and all(_default_fits(schema.items, v) for v in value)
    if isinstance(schema, avs.MapSchema):
        return isinstance(value, dict) and all(
            _default_fits(schema.values, v) for v in value.values()
        )
    if isinstance(schema, avs.UnionSchema):
        return any(_default_fits(branch, value) for branch in schema.schemas)
    if isinstance(schema, avs.RecordSchema):
        return isinstance(value, dict) and all(
            _default_fits(f.type, value[f.name]) if f.name in value else f.has_default
            for f in schema.fields
        )
    return False
