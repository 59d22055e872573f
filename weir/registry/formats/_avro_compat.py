"""Avro schema resolution as a compatibility check: can a reader schema read every datum a
writer schema may write?

The rules are the Avro specification's "Schema Resolution" as Java Avro's
``SchemaCompatibility`` applies them (Confluent's checker calls exactly that): same-type
primitives match; int widens to long, float and double, long to float and double, float to
double; string and bytes read each other; arrays and maps compare their items/values; named
types must have the same unqualified name (or the reader lists the writer's full name among
its aliases); fixed sizes must agree; the reader's enum must hold every writer symbol unless
it has an enum default; each reader field must exist in the writer (by name or alias) or
have a default; every branch of a writer union must be readable, and a non-union writer
needs one readable reader branch.

Apache ``avro``'s Python ``ReaderWriterCompatibilityChecker`` implements the same rules but
merges its findings into sets, losing which message goes with which location, so the walk
is written here over ``avro``'s parsed objects; it yields :class:`Incompatibility` records
(Java's type names and locations such as ``/fields/1/type``), which
:func:`describe` words as Confluent does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from avro import schema as avs

__all__ = ["Incompatibility", "describe", "incompatibilities"]

# What a reader of each primitive type accepts besides its own type (promotion rules).
_PROMOTIONS: dict[str, frozenset[str]] = {
    "long": frozenset({"int"}),
    "float": frozenset({"int", "long"}),
    "double": frozenset({"int", "long", "float"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}
_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


@dataclass(frozen=True, slots=True)
class Incompatibility:
    """One reason a reader cannot read a writer's data (Java's ``Incompatibility``)."""

    kind: str  # READER_FIELD_MISSING_DEFAULT_VALUE, TYPE_MISMATCH, ...
    location: str  # JSON-pointer-like path in the reader schema: "/fields/1/type"
    info: str  # Java's "message": the field name, the missing symbols, ...


def incompatibilities(reader: avs.Schema, writer: avs.Schema) -> list[Incompatibility]:
    """Every incompatibility between ``reader`` and ``writer``, in schema order."""
    return list(_Walk().check(reader, writer, ()))


class _Walk:
    def __init__(self) -> None:
        # Pairs being (or already) compared: recursive types meet themselves again, and a
        # pair under comparison counts as compatible, as in Java's memo table.
        self.visiting: set[tuple[int, int]] = set()

    def compatible(self, reader: avs.Schema, writer: avs.Schema) -> bool:
        return next(iter(self.check(reader, writer, ())), None) is None

    def check(
        self, reader: avs.Schema, writer: avs.Schema, path: tuple[str, ...]
    ) -> Iterator[Incompatibility]:
        pair = (id(reader), id(writer))
        if pair in self.visiting:
            return
        self.visiting.add(pair)
        try:
            yield from self._check(reader, writer, path)
        finally:
            self.visiting.discard(pair)

    def _check(
        self, reader: avs.Schema, writer: avs.Schema, path: tuple[str, ...]
    ) -> Iterator[Incompatibility]:
        rt, wt = reader.type, writer.type
        if rt == wt:
            yield from self._same_type(reader, writer, path)
        elif wt == "union":
            assert isinstance(writer, avs.UnionSchema)
            for branch in writer.schemas:
                yield from self.check(reader, branch, path)
        elif rt in _PRIMITIVES or rt in ("array", "map", "fixed", "enum", "record", "error"):
            if wt not in _PROMOTIONS.get(rt, ()):
                yield _mismatch(reader, writer, path)
        elif rt == "union":
            assert isinstance(reader, avs.UnionSchema)
            if not any(self.compatible(branch, writer) for branch in reader.schemas):
                info = f"reader union lacking writer type: {wt.upper()}"
                yield Incompatibility("MISSING_UNION_BRANCH", _loc(path), info)
        else:
            yield _mismatch(reader, writer, path)

    def _same_type(
        self, reader: avs.Schema, writer: avs.Schema, path: tuple[str, ...]
    ) -> Iterator[Incompatibility]:
        if isinstance(reader, avs.ArraySchema) and isinstance(writer, avs.ArraySchema):
            yield from self.check(reader.items, writer.items, (*path, "items"))
        elif isinstance(reader, avs.MapSchema) and isinstance(writer, avs.MapSchema):
            yield from self.check(reader.values, writer.values, (*path, "values"))
        elif isinstance(reader, avs.UnionSchema) and isinstance(writer, avs.UnionSchema):
            for i, branch in enumerate(writer.schemas):
                if not self.compatible(reader, branch):
                    info = f"reader union lacking writer type: {branch.type.upper()}"
                    yield Incompatibility("MISSING_UNION_BRANCH", _loc((*path, str(i))), info)
        elif isinstance(reader, avs.NamedSchema) and isinstance(writer, avs.NamedSchema):
            if not _names_match(reader, writer):
                info = f"expected: {writer.fullname}"
                yield Incompatibility("NAME_MISMATCH", _loc((*path, "name")), info)
            if isinstance(reader, avs.FixedSchema) and isinstance(writer, avs.FixedSchema):
                if reader.size != writer.size:
                    info = f"expected: {writer.size}, found: {reader.size}"
                    yield Incompatibility("FIXED_SIZE_MISMATCH", _loc((*path, "size")), info)
            elif isinstance(reader, avs.EnumSchema) and isinstance(writer, avs.EnumSchema):
                missing = sorted(set(writer.symbols) - set(reader.symbols))
                if missing and reader.get_prop("default") is None:
                    info = "[" + ", ".join(missing) + "]"
                    yield Incompatibility("MISSING_ENUM_SYMBOLS", _loc((*path, "symbols")), info)
            elif isinstance(reader, avs.RecordSchema) and isinstance(writer, avs.RecordSchema):
                yield from self._fields(reader, writer, path)
        # Primitives of the same type always match.

    def _fields(
        self, reader: avs.RecordSchema, writer: avs.RecordSchema, path: tuple[str, ...]
    ) -> Iterator[Incompatibility]:
        for i, field in enumerate(reader.fields):
            here = (*path, "fields", str(i))
            source = _writer_field(writer, field)
            if source is not None:
                yield from self.check(field.type, source.type, (*here, "type"))
            elif not field.has_default:
                yield Incompatibility("READER_FIELD_MISSING_DEFAULT_VALUE", _loc(here), field.name)


def _loc(path: tuple[str, ...]) -> str:
    return "/" + "/".join(path)


def _mismatch(reader: avs.Schema, writer: avs.Schema, path: tuple[str, ...]) -> Incompatibility:
    info = (
        f"reader type: {reader.type.upper()} not compatible with writer type: {writer.type.upper()}"
    )
    return Incompatibility("TYPE_MISMATCH", _loc(path), info)


def _names_match(reader: avs.NamedSchema, writer: avs.NamedSchema) -> bool:
    # Java compares unqualified names, then the reader's aliases against the writer's full
    # name (aliases resolve in the reader's namespace).
    if reader.name == writer.name:
        return True
    return writer.fullname in _qualified_aliases(reader.get_prop("aliases"), reader.namespace)


def _qualified_aliases(aliases: object, space: str | None) -> set[str]:
    if not isinstance(aliases, list):
        return set()
    return {a if "." in a or not space else f"{space}.{a}" for a in aliases if isinstance(a, str)}


def _writer_field(writer: avs.RecordSchema, field: avs.Field) -> avs.Field | None:
    by_name = writer.fields_dict
    if field.name in by_name:
        return by_name[field.name]
    aliases = field.get_prop("aliases")
    for alias in aliases if isinstance(aliases, list) else ():
        if alias in by_name:
            return by_name[alias]
    return None


# Confluent's descriptions, per kind; {reader}/{writer} become "new"/"old" by direction.
_DESCRIPTIONS = {
    "FIXED_SIZE_MISMATCH": (
        "The size of FIXED type field at path '{path}' in the {reader} schema does not match"
        " with the {writer} schema"
    ),
    "TYPE_MISMATCH": (
        "The type (path '{path}') of a field in the {reader} schema does not match with the"
        " {writer} schema"
    ),
    "NAME_MISMATCH": "The name of the schema has changed (path '{path}')",
    "MISSING_ENUM_SYMBOLS": (
        "The {reader} schema is missing enum symbols '{info}' at path '{path}' in the {writer}"
        " schema"
    ),
    "MISSING_UNION_BRANCH": (
        "The {reader} schema is missing a type inside a union field at path '{path}' in the"
        " {writer} schema"
    ),
    "READER_FIELD_MISSING_DEFAULT_VALUE": (
        "The field '{info}' at path '{path}' in the {reader} schema has no default value and"
        " is missing in the {writer} schema"
    ),
}


def describe(found: Incompatibility, reader: str, writer: str) -> str:
    """Confluent's wording of ``found`` (``reader``/``writer``: "new" or "old")."""
    text = _DESCRIPTIONS[found.kind].format(
        path=found.location, info=found.info, reader=reader, writer=writer
    )
    return f"{{errorType:'{found.kind}', description:'{text}', additionalInfo:'{found.info}'}}"
