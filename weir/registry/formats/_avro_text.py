"""Avro schema text: Confluent's stored form and its ``?normalize=true`` form.

Both are written from two views of one schema walked in parallel: the JSON the client sent
(which keeps its own properties, defaults, docs and key order exactly) and Apache ``avro``'s
parsed objects (which know what every type name resolves to). Neither form is Avro's
Parsing Canonical Form: that one drops docs, defaults, aliases and logical types, which the
registry must keep.

*Stored form* (:func:`stored_json`) is what Java Avro's ``Schema.toString()`` writes, which
is what Confluent stores and returns: ``type`` first, then ``name``, ``namespace`` only where
it differs from the enclosing one, ``doc``, the type's own members (``fields``, ``symbols``,
``size``, ``items``, ``values``), the enum ``default``, other properties in the client's order,
``aliases`` last; a field is ``name``, ``type``, ``doc``, ``default``, ``order`` (only when not
ascending), ``aliases``, then its other properties; a named type is defined where it first
appears and referred to by name after (short when in the enclosing namespace), and types
that come from references are always referred to by name.

*Normalized form* (:func:`normalized_json`) follows Confluent's ``AvroSchemaUtils``
normalisation: every name fully qualified, ``name`` before ``type``, logical types spelled
``logicalType``/``precision``/``scale`` (scale only when not 0), other properties sorted by
key, aliases sorted. Confluent re-parses that text, so the registry stores the stored form of
the normalized schema; :mod:`weir.registry.formats.avro` does the same.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from avro import schema as avs

__all__ = ["dumps", "normalized_json", "stored_json"]

_SCHEMA_RESERVED = frozenset(
    {"type", "name", "namespace", "doc", "fields", "items", "size", "symbols", "values", "aliases"}
)
_FIELD_RESERVED = frozenset({"name", "type", "doc", "default", "order", "aliases"})
_LOGICAL_KEYS = ("logicalType", "precision", "scale")


def dumps(value: object) -> str:
    """Compact JSON as Java's Jackson writes it (no spaces, non-ASCII kept as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _props(node: object, reserved: Collection[str]) -> dict[str, Any]:
    """A JSON node's properties that are not part of the type's own syntax, in its order."""
    if not isinstance(node, dict):
        return {}
    return {k: v for k, v in node.items() if k not in reserved}


def _reserved_for(schema: avs.Schema) -> Collection[str]:
    # An enum's "default" is its own member, not a free property (Java's ENUM_RESERVED).
    return _SCHEMA_RESERVED | {"default"} if schema.type == "enum" else _SCHEMA_RESERVED


def _fullname(schema: avs.NamedSchema) -> str:
    return str(schema.fullname)


def _relative(schema: avs.NamedSchema, space: str | None) -> str:
    """A name as written inside namespace ``space`` (Java's ``getQualified``)."""
    return schema.name if schema.namespace in (None, space) else _fullname(schema)


def stored_json(node: object, schema: avs.Schema, known: Collection[str]) -> object:
    """The stored form of ``schema`` (parsed from ``node``) as JSON data; ``known`` are the
    full names its references define."""
    return _Stored(set(known)).emit(node, schema, None)


class _Stored:
    """One walk writing Java Avro's ``toString`` layout."""

    def __init__(self, seen: set[str]) -> None:
        self.seen = seen  # named types already defined (or brought in by references)

    def emit(self, node: object, schema: avs.Schema, space: str | None) -> object:
        if isinstance(schema, avs.UnionSchema):
            assert isinstance(node, list)
            return [self.emit(n, s, space) for n, s in zip(node, schema.schemas, strict=True)]
        if isinstance(schema, avs.NamedSchema):
            if _fullname(schema) in self.seen:
                return _relative(schema, space)
            self.seen.add(_fullname(schema))
            return self._named(node, schema, space)
        assert isinstance(node, (dict, str))
        props = _props(node, _SCHEMA_RESERVED)
        if isinstance(schema, avs.ArraySchema):
            items = self.emit(node["items"], schema.items, space)  # type: ignore[index]
            return {"type": "array", "items": items, **props}
        if isinstance(schema, avs.MapSchema):
            values = self.emit(node["values"], schema.values, space)  # type: ignore[index]
            return {"type": "map", "values": values, **props}
        return {"type": schema.type, **props} if props else schema.type

    def _named(self, node: object, schema: avs.NamedSchema, space: str | None) -> object:
        assert isinstance(node, dict)
        out: dict[str, Any] = {"type": node["type"], "name": schema.name}
        if schema.namespace != space:
            out["namespace"] = schema.namespace or ""
        if node.get("doc") is not None:
            out["doc"] = node["doc"]
        if isinstance(schema, avs.RecordSchema):
            inner = schema.namespace
            out["fields"] = [
                self._field(f_node, field, inner)
                for f_node, field in zip(node["fields"], schema.fields, strict=True)
            ]
        elif isinstance(schema, avs.EnumSchema):
            out["symbols"] = list(schema.symbols)
            if "default" in node:
                out["default"] = node["default"]
        else:
            out["size"] = node["size"]
        out.update(_props(node, _reserved_for(schema)))
        if node.get("aliases"):
            out["aliases"] = node["aliases"]
        return out

    def _field(self, node: dict[str, Any], field: avs.Field, space: str | None) -> object:
        out: dict[str, Any] = {
            "name": field.name,
            "type": self.emit(node["type"], field.type, space),
        }
        if node.get("doc") is not None:
            out["doc"] = node["doc"]
        if "default" in node:
            out["default"] = node["default"]
        if node.get("order", "ascending") != "ascending":
            out["order"] = node["order"]
        if node.get("aliases"):
            out["aliases"] = node["aliases"]
        out.update(_props(node, _FIELD_RESERVED))
        return out


def normalized_json(node: object, schema: avs.Schema, known: Collection[str]) -> object:
    """Confluent's normalized form of ``schema`` (parsed from ``node``) as JSON data."""
    return _Normalized(set(known)).emit(node, schema)


def _sorted_props(node: object, reserved: Collection[str]) -> dict[str, Any]:
    return dict(sorted(_props(node, reserved).items()))


class _Normalized:
    """One walk writing Confluent's normalized layout."""

    def __init__(self, seen: set[str]) -> None:
        self.seen = seen

    def emit(self, node: object, schema: avs.Schema) -> object:
        if isinstance(schema, avs.UnionSchema):
            assert isinstance(node, list)
            return [self.emit(n, s) for n, s in zip(node, schema.schemas, strict=True)]
        if isinstance(schema, avs.NamedSchema):
            if _fullname(schema) in self.seen:
                return _fullname(schema)
            self.seen.add(_fullname(schema))
            return self._named(node, schema)
        assert isinstance(node, (dict, str))
        if isinstance(schema, avs.ArraySchema):
            items = self.emit(node["items"], schema.items)  # type: ignore[index]
            return {"type": "array", "items": items, **_sorted_props(node, _SCHEMA_RESERVED)}
        if isinstance(schema, avs.MapSchema):
            values = self.emit(node["values"], schema.values)  # type: ignore[index]
            return {"type": "map", "values": values, **_sorted_props(node, _SCHEMA_RESERVED)}
        if isinstance(schema, avs.LogicalSchema):
            return {
                "type": schema.type,
                **_logical(schema),
                **_sorted_props(node, _SCHEMA_RESERVED | set(_LOGICAL_KEYS)),
            }
        props = _sorted_props(node, _SCHEMA_RESERVED)
        return {"type": schema.type, **props} if props else schema.type

    def _named(self, node: object, schema: avs.NamedSchema) -> object:
        assert isinstance(node, dict)
        out: dict[str, Any] = {"name": _fullname(schema), "type": schema.type}
        reserved = set(_reserved_for(schema))
        if isinstance(schema, avs.RecordSchema):
            out["type"] = node["type"]  # "record" or "error"
            out["fields"] = [
                self._field(f_node, field)
                for f_node, field in zip(node["fields"], schema.fields, strict=True)
            ]
        elif isinstance(schema, avs.EnumSchema):
            out["symbols"] = list(schema.symbols)
        else:
            out["size"] = node["size"]
            if isinstance(schema, avs.LogicalSchema):
                out.update(_logical(schema))
                reserved |= set(_LOGICAL_KEYS)
        if node.get("doc"):
            out["doc"] = node["doc"]
        if node.get("aliases"):
            out["aliases"] = sorted(node["aliases"])
        if isinstance(schema, avs.EnumSchema) and "default" in node:
            out["default"] = node["default"]
        out.update(_sorted_props(node, reserved))
        return out

    def _field(self, node: dict[str, Any], field: avs.Field) -> object:
        out: dict[str, Any] = {"name": field.name, "type": self.emit(node["type"], field.type)}
        if node.get("order", "ascending") != "ascending":
            out["order"] = node["order"]
        if node.get("doc") is not None:
            out["doc"] = node["doc"]
        if node.get("aliases"):
            out["aliases"] = sorted(node["aliases"])
        if "default" in node:
            out["default"] = node["default"]
        out.update(_sorted_props(node, _FIELD_RESERVED))
        return out


def _logical(schema: avs.LogicalSchema) -> dict[str, Any]:
    """A valid logical type's own keys, in Confluent's order."""
    out: dict[str, Any] = {"logicalType": schema.logical_type}
    if isinstance(schema, avs.DecimalLogicalSchema):
        props = schema.props  # type: ignore[attr-defined]
        out["precision"] = props["precision"]
        if props.get("scale", 0) != 0:
            out["scale"] = props["scale"]
    return out
