"""Registry schemas as Spark types, and decoded values shaped to fit them (pure; no Spark job).

Theory of operation
-------------------
``from_confluent`` (``spark_jobs.schemas``) needs one Spark type for a column before any
record is read, so it is derived from the subject's schema here, by the rules Spark's own
``from_avro`` / ``from_protobuf`` follow:

* **Avro** (:func:`avro_type`): records → structs, arrays → arrays, maps → maps with string
  keys, enums → strings, fixed/bytes → binary; a union with ``null`` is the other branch,
  nullable; ``[int, long]`` → long and ``[float, double]`` → double; any other union →
  ``struct<member0, member1, ...>`` with the value in the member of its branch. Logical
  types: ``date`` → date, ``timestamp-millis``/``-micros`` → timestamp,
  ``local-timestamp-*`` → timestamp_ntz, ``decimal`` → decimal(p, s).
* **JSON Schema** (:func:`json_schema_type`): an object's properties → struct fields,
  ``integer`` → long, ``number`` → double, ``boolean``, ``string`` (``format: date`` / ``date-time``
  → date / timestamp), arrays of their ``items``; an object with only
  ``additionalProperties`` → map; local ``$ref``s are followed; anything a column cannot type
  (``oneOf``, no ``type``, a ``$ref`` to another subject) → a string holding the JSON text.
* **Protobuf** (:func:`protobuf_type`): a message descriptor's fields → struct, repeated →
  arrays, map entries → maps, enums → strings, ``google.protobuf.Timestamp`` → timestamp,
  unsigned ints widened (uint32 → long, uint64 → decimal(20, 0)) so none overflows.

Recursive types cannot be a Spark type; they fail here, naming the type.

:func:`conform` takes one decoded value (fastavro's, ``json``'s or the protobuf
converter's) and returns it as Arrow builds that Spark type from: dicts with exactly the
struct's fields, union members placed, JSON strings parsed into dates, anything untyped as
JSON text. It raises :class:`ValueError` when a value cannot be that type.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Mapping
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

__all__ = [
    "UnsupportedSchema",
    "avro_type",
    "conform",
    "json_schema_type",
    "protobuf_type",
]


class UnsupportedSchema(ValueError):
    """The schema has no Spark type (recursion, an unknown named type, ...)."""


# -- Avro -----------------------------------------------------------------------------------

_AVRO_PRIMITIVES: dict[str, DataType] = {
    "null": NullType(),
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "bytes": BinaryType(),
    "string": StringType(),
}


def avro_type(schema: Any, named: Mapping[str, Any] | None = None) -> tuple[DataType, bool]:
    """``(Spark type, nullable)`` of an Avro schema (parsed JSON); ``named`` holds the named
    types its references define, by full name."""
    return _AvroWalker(dict(named or {})).walk(schema, "", ())


def avro_named_types(schema: Any, namespace: str = "") -> dict[str, Any]:
    """Every named type (record, enum, fixed) ``schema`` defines, by full name — a
    reference's types, for :func:`avro_type`'s ``named``."""
    found: dict[str, Any] = {}
    _AvroWalker(found).collect(schema, namespace)
    return found


def _full_name(node: Mapping[str, Any], namespace: str) -> str:
    name = str(node["name"])
    if "." in name:
        return name
    ns = node.get("namespace", namespace) or ""
    return f"{ns}.{name}" if ns else name


class _AvroWalker:
    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named

    def collect(self, schema: Any, namespace: str) -> None:
        if isinstance(schema, list):
            for branch in schema:
                self.collect(branch, namespace)
        elif isinstance(schema, dict):
            kind = schema.get("type")
            if kind in ("record", "error", "enum", "fixed"):
                full = _full_name(schema, namespace)
                self.named[full] = schema
                namespace = full.rpartition(".")[0]
            for field in schema.get("fields", ()) if kind in ("record", "error") else ():
                self.collect(field["type"], namespace)
            if kind == "array":
                self.collect(schema["items"], namespace)
            if kind == "map":
                self.collect(schema["values"], namespace)

    def walk(self, schema: Any, namespace: str, seen: tuple[str, ...]) -> tuple[DataType, bool]:
        if isinstance(schema, list):
            return self._union(schema, namespace, seen)
        if isinstance(schema, str):
            if schema in _AVRO_PRIMITIVES:
                return _AVRO_PRIMITIVES[schema], schema == "null"
            full = schema if "." in schema or not namespace else f"{namespace}.{schema}"
            node = self.named.get(full, self.named.get(schema))
            if node is None:
                raise UnsupportedSchema(f"Avro type {schema!r} is not defined")
            name = _full_name(node, full.rpartition(".")[0])
            if name in seen:
                raise UnsupportedSchema(f"Avro record {name!r} is recursive; Spark has no type")
            return self.walk(node, name.rpartition(".")[0], seen)
        kind = schema.get("type")
        logical = schema.get("logicalType")
        if isinstance(kind, (dict, list)):
            return self.walk(kind, namespace, seen)
        if kind in ("record", "error"):
            full = _full_name(schema, namespace)
            if full in seen:
                raise UnsupportedSchema(f"Avro record {full!r} is recursive; Spark has no type")
            self.named.setdefault(full, schema)
            inner = full.rpartition(".")[0]
            fields = []
            for field in schema.get("fields", ()):
                ftype, nullable = self.walk(field["type"], inner, (*seen, full))
                fields.append(StructField(field["name"], ftype, nullable))
            return StructType(fields), False
        if kind in ("enum", "fixed"):
            self.named.setdefault(_full_name(schema, namespace), schema)
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return DecimalType(int(schema["precision"]), int(schema.get("scale", 0))), False
        if logical == "date" and kind == "int":
            return DateType(), False
        if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
            return TimestampType(), False
        if logical in ("local-timestamp-millis", "local-timestamp-micros") and kind == "long":
            return TimestampNTZType(), False
        if kind == "enum":
            return StringType(), False
        if kind == "fixed":
            return BinaryType(), False
        if kind == "array":
            items, nullable = self.walk(schema["items"], namespace, seen)
            return ArrayType(items, nullable), False
        if kind == "map":
            values, nullable = self.walk(schema["values"], namespace, seen)
            return MapType(StringType(), values, nullable), False
        return self.walk(kind, namespace, seen)

    def _union(
        self, branches: list[Any], namespace: str, seen: tuple[str, ...]
    ) -> tuple[DataType, bool]:
        typed = [self.walk(b, namespace, seen)[0] for b in branches]
        nullable = any(isinstance(t, NullType) for t in typed)
        rest = [t for t in typed if not isinstance(t, NullType)]
        if not rest:
            return NullType(), True
        if len(rest) == 1:
            return rest[0], nullable
        kinds = {type(t) for t in rest}
        if kinds == {IntegerType, LongType}:
            return LongType(), nullable
        if kinds == {FloatType, DoubleType}:
            return DoubleType(), nullable
        # Spark's from_avro: one nullable member per non-null branch, in order.
        members = [StructField(f"member{i}", t, True) for i, t in enumerate(rest)]
        return StructType(members), nullable


# -- JSON Schema ----------------------------------------------------------------------------

_JSON_SCALARS: dict[str, DataType] = {
    "integer": LongType(),
    "number": DoubleType(),
    "boolean": BooleanType(),
    "string": StringType(),
}


def json_schema_type(schema: Any) -> tuple[DataType, bool]:
    """``(Spark type, nullable)`` of a JSON Schema (parsed JSON)."""
    return _json_walk(schema, schema, ())


def _json_walk(node: Any, root: Any, seen: tuple[str, ...]) -> tuple[DataType, bool]:
    if not isinstance(node, dict):
        return StringType(), True  # true / false schemas: anything at all
    ref = node.get("$ref")
    if isinstance(ref, str):
        if not ref.startswith("#"):
            return StringType(), True  # another subject's schema: kept as JSON text
        if ref in seen:
            raise UnsupportedSchema(f"JSON Schema {ref!r} is recursive; Spark has no type")
        target: Any = root
        for part in ref.lstrip("#").strip("/").split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                raise UnsupportedSchema(f"JSON Schema $ref {ref!r} points at nothing")
            target = target[part]
        return _json_walk(target, root, (*seen, ref))
    kind = node.get("type")
    if kind is None and "properties" in node:
        kind = "object"
    kinds = kind if isinstance(kind, list) else [kind]
    nullable = "null" in kinds
    rest = [k for k in kinds if k != "null"]
    if len(rest) != 1:
        return StringType(), True  # several types or none: JSON text
    kind = rest[0]
    if kind == "object":
        props = node.get("properties")
        extra = node.get("additionalProperties")
        if not props and isinstance(extra, dict):
            values, vnull = _json_walk(extra, root, seen)
            return MapType(StringType(), values, vnull), nullable
        if not props:
            return StringType(), nullable
        # Every property may be absent from a record, so every field is nullable.
        fields = [
            StructField(name, _json_walk(sub, root, seen)[0], True) for name, sub in props.items()
        ]
        return StructType(fields), nullable
    if kind == "array":
        items = node.get("items")
        if not isinstance(items, dict):
            return StringType(), nullable
        itype, inull = _json_walk(items, root, seen)
        return ArrayType(itype, inull), nullable
    if kind == "string":
        fmt = node.get("format")
        if fmt == "date":
            return DateType(), nullable
        if fmt == "date-time":
            return TimestampType(), nullable
    if kind in _JSON_SCALARS:
        return _JSON_SCALARS[kind], nullable
    return StringType(), True


# -- Protobuf -------------------------------------------------------------------------------


def protobuf_type(descriptor: Any) -> StructType:
    """The struct of a protobuf ``Descriptor`` (a message type)."""
    return _proto_message(descriptor, ())


def _proto_message(desc: Any, seen: tuple[str, ...]) -> StructType:
    if desc.full_name in seen:
        raise UnsupportedSchema(f"Protobuf message {desc.full_name!r} is recursive")
    return StructType(
        [StructField(f.name, _proto_field(f, (*seen, desc.full_name)), True) for f in desc.fields]
    )


def _proto_field(field: Any, seen: tuple[str, ...]) -> DataType:
    message = field.message_type
    if _is_repeated(field):
        if message is not None and message.GetOptions().map_entry:
            key = _proto_scalar(message.fields_by_name["key"], seen)
            value = _proto_scalar(message.fields_by_name["value"], seen)
            return MapType(key, value, True)
        return ArrayType(_proto_scalar(field, seen), False)
    return _proto_scalar(field, seen)


def _is_repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)
    if repeated is not None:
        return bool(repeated)
    return field.label == field.LABEL_REPEATED


def _proto_scalar(field: Any, seen: tuple[str, ...]) -> DataType:
    from google.protobuf.descriptor import FieldDescriptor as F

    t = field.type
    if t in (F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32):
        return IntegerType()
    if t in (F.TYPE_INT64, F.TYPE_SINT64, F.TYPE_SFIXED64, F.TYPE_UINT32, F.TYPE_FIXED32):
        return LongType()
    if t in (F.TYPE_UINT64, F.TYPE_FIXED64):
        return DecimalType(20, 0)
    if t == F.TYPE_FLOAT:
        return FloatType()
    if t == F.TYPE_DOUBLE:
        return DoubleType()
    if t == F.TYPE_BOOL:
        return BooleanType()
    if t == F.TYPE_STRING or t == F.TYPE_ENUM:
        return StringType()
    if t == F.TYPE_BYTES:
        return BinaryType()
    if field.message_type.full_name == "google.protobuf.Timestamp":
        return TimestampType()
    return _proto_message(field.message_type, seen)


def protobuf_value(message: Any) -> dict[str, Any]:
    """A protobuf message as plain Python: fields by name (unset singular messages None,
    enums by name, timestamps as aware datetimes), ready for :func:`conform`."""
    from google.protobuf.descriptor import FieldDescriptor as F

    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if _is_repeated(field):
            entry = field.message_type
            if entry is not None and entry.GetOptions().map_entry:
                vfield = entry.fields_by_name["value"]
                out[field.name] = {k: _proto_one(vfield, v) for k, v in value.items()}
            else:
                out[field.name] = [_proto_one(field, v) for v in value]
        elif field.type == F.TYPE_MESSAGE and not message.HasField(field.name):
            out[field.name] = None
        else:
            out[field.name] = _proto_one(field, value)
    return out


def _proto_one(field: Any, value: Any) -> Any:
    from google.protobuf.descriptor import FieldDescriptor as F

    if field.type == F.TYPE_ENUM:
        found = field.enum_type.values_by_number.get(value)
        return found.name if found is not None else str(value)
    if field.type == F.TYPE_MESSAGE:
        if field.message_type.full_name == "google.protobuf.Timestamp":
            return value.ToDatetime(tzinfo=dt.UTC)
        return protobuf_value(value)
    return value


# -- values ---------------------------------------------------------------------------------


def conform(value: Any, dtype: DataType) -> Any:
    """``value`` as Arrow builds ``dtype`` from (see the module docstring)."""
    if value is None or isinstance(dtype, NullType):
        return None
    if isinstance(dtype, StructType):
        if _is_union_struct(dtype):
            return _place_member(value, dtype)
        if not isinstance(value, Mapping):
            raise ValueError(f"expected an object for {dtype.simpleString()}, got {value!r:.80}")
        return {f.name: conform(value.get(f.name), f.dataType) for f in dtype.fields}
    if isinstance(dtype, ArrayType):
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"expected an array, got {value!r:.80}")
        return [conform(v, dtype.elementType) for v in value]
    if isinstance(dtype, MapType):
        if not isinstance(value, Mapping):
            raise ValueError(f"expected a map, got {value!r:.80}")
        return [(conform(k, dtype.keyType), conform(v, dtype.valueType)) for k, v in value.items()]
    if isinstance(dtype, StringType):
        if isinstance(value, str):
            return value
        if isinstance(value, (dict, list, bool, int, float)):
            return json.dumps(value, sort_keys=True)
        return str(value)
    if isinstance(dtype, BinaryType):
        if isinstance(value, str):
            return base64.b64decode(value)  # JSON carries bytes as base64
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise ValueError(f"expected bytes, got {value!r:.80}")
        return bytes(value)
    if isinstance(dtype, BooleanType):
        if not isinstance(value, bool):
            raise ValueError(f"expected a boolean, got {value!r:.80}")
        return value
    if isinstance(dtype, (IntegerType, LongType)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {value!r:.80}")
        return value
    if isinstance(dtype, (FloatType, DoubleType)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a number, got {value!r:.80}")
        return float(value)
    if isinstance(dtype, DecimalType):
        return decimal.Decimal(value)
    if isinstance(dtype, DateType):
        if isinstance(value, str):
            return dt.date.fromisoformat(value)
        return value
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        if isinstance(value, str):
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if isinstance(dtype, TimestampNTZType) and value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value
    return value


def _is_union_struct(dtype: StructType) -> bool:
    names = [f.name for f in dtype.fields]
    return bool(names) and names == [f"member{i}" for i in range(len(names))]


def _place_member(value: Any, dtype: StructType) -> dict[str, Any]:
    """A multi-branch union's value in the first member whose type its Python type is
    (fastavro returns a union's value without saying which branch it came from)."""
    out: dict[str, Any] = {f.name: None for f in dtype.fields}
    for f in dtype.fields:
        if _fits(value, f.dataType):
            out[f.name] = conform(value, f.dataType)
            return out
    raise ValueError(f"{value!r:.80} fits no branch of {dtype.simpleString()}")


def _fits(value: Any, dtype: DataType) -> bool:
    if isinstance(value, bool):
        return isinstance(dtype, BooleanType)
    if isinstance(dtype, (IntegerType, LongType)):
        return isinstance(value, int)
    if isinstance(dtype, (FloatType, DoubleType)):
        return isinstance(value, (int, float))
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        return isinstance(value, dt.datetime)
    if isinstance(dtype, DateType):
        return isinstance(value, dt.date) and not isinstance(value, dt.datetime)
    kinds: list[tuple[type[DataType], type | tuple[type, ...]]] = [
        (StringType, str),
        (BinaryType, (bytes, bytearray, memoryview)),
        (DecimalType, decimal.Decimal),
        (StructType, Mapping),
        (MapType, Mapping),
        (ArrayType, (list, tuple)),
    ]
    return any(isinstance(dtype, d) and isinstance(value, p) for d, p in kinds)
