"""Records in Confluent's wire format: JSON data to schema'd bytes and back, through the registry.

What the REST proxy needs to speak the ``avro``, ``jsonschema`` and ``protobuf`` embedded
formats, in one place for v2 and v3 (and any other reader of Confluent-framed records):

- **Framing.** Confluent's serializers write a magic byte ``0``, the schema id as a 4-byte
  big-endian integer, then (Protobuf only) the *message indexes* that locate the message type
  in the schema's file, then the payload. :func:`frame` and :func:`unframe`.
- **Conversion per format.** :func:`encode` turns a JSON value into the format's payload,
  :func:`decode` turns a payload back into JSON, as Confluent's REST proxy shows it:

  * AVRO: the value is in Avro's JSON encoding (a non-null union value is
    ``{"<branch>": value}``, bytes and fixed are strings of code points 0-255, a missing
    record field takes its default); :func:`_avro_from_json` checks it against the schema
    with the path of the first mismatch, fastavro writes and reads the binary. Logical types
    are left out of what fastavro sees, so values travel in their underlying type (a
    ``timestamp-millis`` is a long), as Avro's JSON encoder and Confluent's proxy show them.
  * JSON (``jsonschema``): validated with ``jsonschema`` (references resolved), written as
    compact UTF-8 JSON.
  * PROTOBUF: protobuf's ``json_format`` into a dynamic message of the schema's first message
    type (message indexes ``[0]``, written as the single byte 0); decoding follows the
    indexes in the frame, and prints fields with their default values, as Confluent does.

  Decoding Avro asks fastavro for record names, so a union of records answers the branch that
  was written; other unions answer the first branch whose type the value has (``int`` before
  ``long``: fastavro does not say which of two such branches wrote it).

- **Which schema.** :func:`resolve` finds the schema a produce request names (an id, a
  subject's version or latest, or a schema text to look up or register) and the subject by
  the subject name strategies of Confluent's serializers (:func:`subject_name`).

Failures are typed so that each API can answer them with its own codes:
:class:`SchemaArgumentError` (the request names a schema in a way that cannot work),
:class:`~weir.registry.formats.InvalidSchema` (a schema text that does not parse),
:class:`~weir.registry.errors.RegistryError` (the registry refused a lookup or registration)
and :class:`DataError` (the data does not fit the schema, or the bytes are not framed).
"""

from __future__ import annotations

import functools
import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from weir.registry import errors, framing
from weir.registry.formats import InvalidSchema, ParsedSchema, parse
from weir.registry.service import SchemaRegistry

__all__ = [
    "EMBEDDED_FORMATS",
    "STRATEGIES",
    "DataError",
    "InvalidSchema",
    "Resolved",
    "SchemaArgumentError",
    "decode",
    "deserialize",
    "encode",
    "frame",
    "message_indexes",
    "record_name",
    "resolve",
    "serialize",
    "subject_name",
    "unframe",
]

MAGIC = framing.MAGIC
# The REST proxy's embedded format names -> the registry's schemaType.
EMBEDDED_FORMATS = {"AVRO": "AVRO", "JSONSCHEMA": "JSON", "PROTOBUF": "PROTOBUF"}
STRATEGIES = ("TOPIC_NAME", "RECORD_NAME", "TOPIC_RECORD_NAME")
_INT = (-(2**31), 2**31 - 1)
_LONG = (-(2**63), 2**63 - 1)


class DataError(ValueError):
    """The data does not fit its schema, or bytes are not a Confluent-framed record; the
    message says where and why."""


class SchemaArgumentError(ValueError):
    """A request names its schema in a way that cannot work (say, an id and a schema text)."""


# -- framing ---------------------------------------------------------------------------------
def frame(schema_id: int, payload: bytes) -> bytes:
    """Confluent's wire format: magic byte, schema id, payload (which, for Protobuf, starts
    with the message indexes :func:`encode` wrote)."""
    return framing.frame(schema_id, payload)


def unframe(data: bytes) -> tuple[int, bytes]:
    """(schema id, payload) of a Confluent-framed record; :class:`DataError` otherwise."""
    try:
        found = framing.parse_frame(data)
    except framing.NotFramed as exc:
        raise DataError(f"not a Confluent-framed record: {exc}") from None
    return found.schema_id, found.payload


def serialize(schema_id: int, schema: ParsedSchema, data: Any) -> bytes:
    """``data`` (JSON) as a framed record of ``schema``."""
    return frame(schema_id, encode(schema, data))


def deserialize(data: bytes, schema_of: Callable[[int], ParsedSchema]) -> tuple[int, Any]:
    """(schema id, JSON value) of a framed record; ``schema_of`` gives the schema by id."""
    schema_id, payload = unframe(data)
    return schema_id, decode(schema_of(schema_id), payload)


def encode(schema: ParsedSchema, data: Any) -> bytes:
    """The payload ``schema``'s serializer writes for the JSON value ``data``."""
    return _FORMATS[schema.schema_type][0](schema, data)


def decode(schema: ParsedSchema, payload: bytes) -> Any:
    """The JSON value of a payload written with ``schema``."""
    return _FORMATS[schema.schema_type][1](schema, payload)


# -- AVRO ------------------------------------------------------------------------------------
def _strip_logical(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_logical(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_strip_logical(v) for v in node]
    return node


@functools.lru_cache(maxsize=256)
def _fastavro_schema(schema: ParsedSchema) -> tuple[Any, dict[str, Any]]:
    """fastavro's parsed form of an Avro schema (logical types left out) and every named type
    it and its references define, by full name."""
    import fastavro

    named: dict[str, Any] = {}

    def add(parsed: ParsedSchema) -> Any:
        for ref in parsed.references:
            add(ref.schema)
        return fastavro.parse_schema(
            _strip_logical(json.loads(parsed.canonical())), named_schemas=named
        )

    return add(schema), named


def _avro_encode(schema: ParsedSchema, data: Any) -> bytes:
    import fastavro

    parsed, named = _fastavro_schema(schema)
    value = _avro_from_json(parsed, data, named, "value")
    out = io.BytesIO()
    try:
        fastavro.schemaless_writer(out, parsed, value)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # a backstop
        raise DataError(f"does not fit the Avro schema: {exc}") from None
    return out.getvalue()


def _avro_decode(schema: ParsedSchema, payload: bytes) -> Any:
    import fastavro

    parsed, named = _fastavro_schema(schema)
    try:
        # Record names say which branch of a union of records was written.
        value = fastavro.schemaless_reader(
            io.BytesIO(payload), parsed, None, return_record_name=True
        )
    except (ValueError, TypeError, EOFError, IndexError, KeyError) as exc:
        raise DataError(f"the payload is not valid Avro for schema: {exc}") from None
    return _avro_to_json(parsed, value, named)


def _avro_to_json(node: Any, value: Any, named: dict[str, Any]) -> Any:
    """What fastavro read, in Avro's JSON encoding (the inverse of :func:`_avro_from_json`)."""
    if isinstance(node, list):  # a union
        if value is None:
            return None
        if isinstance(value, tuple):  # (record name, record), from return_record_name
            name, inner = value
            return {name: _avro_to_json(named[name], inner, named)}
        for branch in node:
            if branch != "null" and _avro_fits(branch, value, named):
                return {_type_of(branch): _avro_to_json(branch, value, named)}
        raise DataError(f"no branch of {[_type_of(b) for b in node]} holds {value!r}")
    if isinstance(node, str):
        if node in named:
            return _avro_to_json(named[node], value, named)
        return value.decode("latin-1") if node == "bytes" else value
    kind = node["type"]
    if kind in ("record", "error"):
        return {
            f["name"]: _avro_to_json(f["type"], value[f["name"]], named) for f in node["fields"]
        }
    if kind == "fixed":
        return value.decode("latin-1")
    if kind == "array":
        return [_avro_to_json(node["items"], v, named) for v in value]
    if kind == "map":
        return {k: _avro_to_json(node["values"], v, named) for k, v in value.items()}
    if kind == "enum":
        return value
    return _avro_to_json(kind, value, named)


def _avro_fits(node: Any, value: Any, named: dict[str, Any]) -> bool:
    """Whether a value fastavro read (not a record: those come named) is of type ``node``."""
    if isinstance(node, str) and node in named:
        node = named[node]
    kind = node if isinstance(node, str) else node["type"]
    checks: dict[str, Callable[[Any], bool]] = {
        "boolean": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "long": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, float),
        "double": lambda v: isinstance(v, float),
        "string": lambda v: isinstance(v, str),
        "bytes": lambda v: isinstance(v, bytes),
        "enum": lambda v: isinstance(v, str) and v in node["symbols"],
        "fixed": lambda v: isinstance(v, bytes) and len(v) == node["size"],
        "array": lambda v: isinstance(v, list),
        "map": lambda v: isinstance(v, dict),
    }
    check = checks.get(kind)
    return check is not None and check(value)


def _type_of(node: Any) -> str:
    """The name a union branch goes by in Avro's JSON encoding."""
    if isinstance(node, str):
        return node
    if isinstance(node, dict):
        kind = node["type"]
        return node["name"] if kind in ("record", "enum", "fixed", "error") else kind
    return "union"


def _avro_from_json(node: Any, value: Any, named: dict[str, Any], path: str) -> Any:
    """``value`` in Avro's JSON encoding as the Python value fastavro writes for ``node``
    (fastavro's parsed schema); :class:`DataError` naming ``path`` at the first mismatch."""

    def wrong(expected: str) -> DataError:
        return DataError(f"{path}: expected {expected}, got {json.dumps(value)[:80]}")

    if isinstance(node, list):  # a union
        if value is None:
            if "null" in node:
                return None
            raise wrong(f"one of {[_type_of(b) for b in node]} (null is not a branch)")
        if not isinstance(value, dict) or len(value) != 1:
            raise wrong(
                'a union value as {"<branch>": value}, branch one of '
                f"{[_type_of(b) for b in node if b != 'null']}"
            )
        ((branch_name, inner),) = value.items()
        for branch in node:
            name = _type_of(branch)
            if branch_name == name or (name in named and branch_name == name.rsplit(".", 1)[-1]):
                converted = _avro_from_json(branch, inner, named, f"{path}.{branch_name}")
                # The tuple notation makes fastavro write this record branch, not the first
                # branch the value happens to fit.
                is_record = name in named and named[name].get("type") in ("record", "error")
                return (name, converted) if is_record else converted
        raise wrong(f"a branch of {[_type_of(b) for b in node]}, not {branch_name!r}")
    if isinstance(node, str):
        if node in named:
            return _avro_from_json(named[node], value, named, path)
        return _avro_primitive(node, value, wrong)
    kind = node["type"]
    if kind in ("record", "error"):
        if not isinstance(value, dict):
            raise wrong(f"a record {node['name']} (a JSON object)")
        out = {}
        for field in node["fields"]:
            name = field["name"]
            if name in value:
                out[name] = _avro_from_json(field["type"], value[name], named, f"{path}.{name}")
            elif "default" in field:
                out[name] = _avro_from_json(
                    field["type"]
                    if not isinstance(field["type"], list)
                    else field["type"][0],  # a union's default is of its first branch
                    field["default"],
                    named,
                    f"{path}.{name}",
                )
            else:
                raise DataError(f"{path}: field {name!r} of {node['name']} is missing")
        unknown = set(value) - {f["name"] for f in node["fields"]}
        if unknown:
            raise DataError(f"{path}: {node['name']} has no field {sorted(unknown)[0]!r}")
        return out
    if kind == "enum":
        if value not in node["symbols"]:
            raise wrong(f"a symbol of {node['name']} {node['symbols']}")
        return value
    if kind == "fixed":
        raw = _avro_bytes(value, wrong)
        if len(raw) != node["size"]:
            raise wrong(f"{node['size']} bytes for fixed {node['name']}")
        return raw
    if kind == "array":
        if not isinstance(value, list):
            raise wrong("an array")
        return [
            _avro_from_json(node["items"], v, named, f"{path}[{i}]") for i, v in enumerate(value)
        ]
    if kind == "map":
        if not isinstance(value, dict):
            raise wrong("a map (a JSON object)")
        return {
            k: _avro_from_json(node["values"], v, named, f"{path}.{k}") for k, v in value.items()
        }
    return _avro_from_json(kind, value, named, path)  # {"type": "int"} and the like


def _avro_bytes(value: Any, wrong: Callable[[str], DataError]) -> bytes:
    if not isinstance(value, str):
        raise wrong("bytes as a string of code points 0-255")
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        raise wrong("bytes as a string of code points 0-255") from None


def _avro_primitive(kind: str, value: Any, wrong: Callable[[str], DataError]) -> Any:
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "null":
        if value is not None:
            raise wrong("null")
        return None
    if kind == "boolean":
        if not isinstance(value, bool):
            raise wrong("a boolean")
        return value
    if kind in ("int", "long"):
        low, high = _INT if kind == "int" else _LONG
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
            raise wrong(f"an {kind}")
        return value
    if kind in ("float", "double"):
        if value in ("NaN", "Infinity", "-Infinity"):
            return float(value.replace("Infinity", "inf"))
        if not is_number or not math.isfinite(value):
            raise wrong(f"a {kind}")
        return float(value)
    if kind == "string":
        if not isinstance(value, str):
            raise wrong("a string")
        return value
    if kind == "bytes":
        return _avro_bytes(value, wrong)
    raise wrong(f"a value of unknown type {kind!r}")


# -- JSON Schema -----------------------------------------------------------------------------
def _json_encode(schema: ParsedSchema, data: Any) -> bytes:
    validator = schema.validator()  # type: ignore[attr-defined]
    error = next(iter(sorted(validator.iter_errors(data), key=lambda e: list(e.path))), None)
    if error is not None:
        where = "value" + "".join(f"[{p!r}]" for p in error.path)
        raise DataError(f"{where}: {error.message}")
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def _json_decode(schema: ParsedSchema, payload: bytes) -> Any:
    try:
        return json.loads(payload)
    except ValueError as exc:
        raise DataError(f"the payload is not JSON: {exc}") from None


# -- PROTOBUF --------------------------------------------------------------------------------
def message_indexes(indexes: list[int]) -> bytes:
    """Confluent's encoding of a message type's path (:func:`framing.message_indexes`)."""
    return framing.message_indexes(indexes)


def _message_class(schema: ParsedSchema, indexes: list[int]) -> Any:
    from google.protobuf import message_factory

    fdp = schema.file  # type: ignore[attr-defined]
    candidates = list(fdp.message_type)
    names = [fdp.package] if fdp.package else []
    for depth, index in enumerate(indexes):
        if not 0 <= index < len(candidates):
            raise DataError(f"message index {indexes} names no message type of the schema")
        message = candidates[index]
        names.append(message.name)
        if depth + 1 < len(indexes):
            candidates = list(message.nested_type)
    descriptor = schema.pool.FindMessageTypeByName(".".join(names))  # type: ignore[attr-defined]
    return message_factory.GetMessageClass(descriptor)


def _protobuf_encode(schema: ParsedSchema, data: Any) -> bytes:
    from google.protobuf import json_format

    if not schema.file.message_type:  # type: ignore[attr-defined]
        raise DataError("the Protobuf schema defines no message type")
    message = _message_class(schema, [0])()
    if not isinstance(data, dict):
        raise DataError(f"value: expected a JSON object for {message.DESCRIPTOR.full_name}")
    try:
        json_format.ParseDict(data, message)
    except json_format.ParseError as exc:
        raise DataError(f"value: {exc}") from None
    return message_indexes([0]) + message.SerializeToString()


def _protobuf_decode(schema: ParsedSchema, payload: bytes) -> Any:
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError

    try:
        indexes, at = framing.read_message_indexes(payload, 0)
    except framing.NotFramed as exc:
        raise DataError(f"the Protobuf message indexes are truncated: {exc}") from None
    message = _message_class(schema, list(indexes))()
    try:
        message.ParseFromString(payload[at:])
    except DecodeError as exc:
        raise DataError(
            f"the payload is not a valid {message.DESCRIPTOR.full_name}: {exc}"
        ) from None
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


_FORMATS: dict[
    str, tuple[Callable[[ParsedSchema, Any], bytes], Callable[[ParsedSchema, bytes], Any]]
] = {
    "AVRO": (_avro_encode, _avro_decode),
    "JSON": (_json_encode, _json_decode),
    "PROTOBUF": (_protobuf_encode, _protobuf_decode),
}


# -- subjects and schemas --------------------------------------------------------------------
def record_name(schema: ParsedSchema) -> str:
    """The name RecordNameStrategy uses: an Avro schema's full name (a primitive's type
    name), a JSON Schema's ``title``, a Protobuf file's first message's full name."""
    if schema.schema_type == "AVRO":
        avro_schema = schema.schema  # type: ignore[attr-defined]
        return str(getattr(avro_schema, "fullname", None) or avro_schema.type)
    if schema.schema_type == "JSON":
        document = schema.document  # type: ignore[attr-defined]
        title = document.get("title") if isinstance(document, dict) else None
        if not isinstance(title, str) or not title:
            raise SchemaArgumentError(
                "a record name strategy needs a JSON Schema with a title (its record name)"
            )
        return title
    fdp = schema.file  # type: ignore[attr-defined]
    if not fdp.message_type:
        raise SchemaArgumentError("the Protobuf schema defines no message type")
    first = fdp.message_type[0].name
    return f"{fdp.package}.{first}" if fdp.package else first


def subject_name(strategy: str, topic: str, is_key: bool, schema: ParsedSchema | None) -> str:
    """The subject Confluent's serializers use: TOPIC_NAME ``<topic>-key|value``,
    RECORD_NAME ``<record name>``, TOPIC_RECORD_NAME ``<topic>-<record name>``."""
    if strategy == "TOPIC_NAME":
        return f"{topic}-{'key' if is_key else 'value'}"
    if strategy not in STRATEGIES:
        raise SchemaArgumentError(
            f"subject_name_strategy {strategy!r} is not one of {', '.join(STRATEGIES)}"
        )
    if schema is None:
        raise SchemaArgumentError(
            f"subject_name_strategy {strategy} needs the schema (schema_id or schema) or a subject"
        )
    name = record_name(schema)
    return name if strategy == "RECORD_NAME" else f"{topic}-{name}"


@dataclass(frozen=True, slots=True)
class Resolved:
    """The registered schema a record is written with."""

    schema_id: int
    schema: ParsedSchema
    subject: str | None
    version: int | None


def resolve(
    registry: SchemaRegistry,
    *,
    topic: str,
    is_key: bool,
    schema_type: str | None = None,
    schema_id: int | None = None,
    schema_version: int | None = None,
    schema_text: str | None = None,
    subject: str | None = None,
    strategy: str | None = None,
) -> Resolved:
    """The schema a produce request names, as Confluent's REST proxy finds it:

    - ``schema_id``: that schema (its version under the subject when the subject holds it);
    - ``schema_version``: that version of the subject;
    - ``schema_text`` (with ``schema_type``): looked up under the subject, registered when new;
    - none of them: the subject's latest version.

    The subject is ``subject`` or the strategy's (TopicNameStrategy by default).
    :class:`SchemaArgumentError`, :class:`InvalidSchema`, :class:`RegistryError`."""
    strategy = strategy or "TOPIC_NAME"
    given = [
        name
        for name, v in (
            ("schema_id", schema_id),
            ("schema_version", schema_version),
            ("schema", schema_text),
        )
        if v is not None
    ]
    if len(given) > 1:
        raise SchemaArgumentError(f"give only one of {' and '.join(given)}")
    if schema_id is not None:
        parsed = registry.parsed(schema_id)
        if schema_type is not None and parsed.schema_type != schema_type:
            raise SchemaArgumentError(
                f"schema {schema_id} is {parsed.schema_type}, not {schema_type}"
            )
        name = subject or subject_name(strategy, topic, is_key, parsed)
        versions = [
            v["version"] for v in registry.schema_versions(schema_id) if v["subject"] == name
        ]
        return Resolved(schema_id, parsed, name, max(versions) if versions else None)
    if schema_text is not None:
        if schema_type is None:
            raise SchemaArgumentError("a schema needs its type (AVRO, JSONSCHEMA or PROTOBUF)")
        parsed = parse(schema_type, schema_text)
        name = subject or subject_name(strategy, topic, is_key, parsed)
        try:
            found = registry.lookup(name, schema_text, schema_type=schema_type)
        except errors.RegistryError as exc:
            if exc.error_code not in (errors.SUBJECT_NOT_FOUND, errors.SCHEMA_NOT_FOUND):
                raise
            registry.register(name, schema_text, schema_type=schema_type)
            found = registry.lookup(name, schema_text, schema_type=schema_type)
        return Resolved(found["id"], registry.parsed(found["id"]), name, found["version"])
    name = subject or subject_name(strategy, topic, is_key, None)
    found = registry.version(name, schema_version if schema_version is not None else "latest")
    parsed = registry.parsed(found["id"])
    if schema_type is not None and parsed.schema_type != schema_type:
        raise SchemaArgumentError(
            f"subject {name} version {found['version']} is {parsed.schema_type}, not {schema_type}"
        )
    return Resolved(found["id"], parsed, name, found["version"])
