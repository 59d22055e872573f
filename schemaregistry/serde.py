"""The REST proxy's door to the Schema Registry: schema'd records in, decoded records out.

The conversions themselves are :mod:`weir.registry.serde` (Django-free); this module gives
them the web process's registry (:func:`schemaregistry.registry.registry`) and turns their
failures into the answers Confluent's REST proxy gives, which differ between the APIs:

======================  ===================================  ================================
failure                 v2 (``/kafka/topics/...``)           v3 (``/kafka/v3/.../records``)
======================  ===================================  ================================
bad schema arguments    422, 42205                           400
schema text invalid     422, 42205 "Invalid schema: ..."     422, 42205 "Invalid schema: ..."
registry refused        408, 40801 "Schema registration      422, 42207 "Error serializing
                        or lookup failed: ..."               message. ..." (5xx stays 5xx)
data does not fit       422, 42203 "Conversion of JSON to    400 "Failed to parse ... data"
                        ... failed: ..."
======================  ===================================  ================================

(v2's 408 for a registry failure is what Confluent's proxy answers, odd as the status is.)
"""

from __future__ import annotations

import time
from typing import Any

from controlplane.errors import ApiError, BadRequest, Unprocessable
from schemaregistry.registry import registry
from weir.registry import serde
from weir.registry.errors import RegistryError
from weir.registry.formats import InvalidSchema

__all__ = [
    "SCHEMA_ERRORS",
    "decode_framed",
    "embedded_name",
    "read_record",
    "resolve",
    "schema_type",
    "v2_error",
    "v3_error",
]

SCHEMA_ERRORS = (serde.SchemaArgumentError, InvalidSchema, RegistryError, serde.DataError)
_READABLE = {"AVRO": "Avro", "JSON": "JSON Schema", "PROTOBUF": "Protobuf"}
_EMBEDDED = {v: k for k, v in serde.EMBEDDED_FORMATS.items()}


def schema_type(embedded: str) -> str:
    """The registry's schemaType for a v2 embedded format or a v3 type (``avro``,
    ``JSONSCHEMA``...)."""
    return serde.EMBEDDED_FORMATS[embedded.upper()]


def embedded_name(schema_type: str) -> str:
    """The v3 type of a registry schemaType (``JSON`` is ``JSONSCHEMA``)."""
    return _EMBEDDED[schema_type]


def resolve(**arguments: Any) -> serde.Resolved:
    """:func:`weir.registry.serde.resolve` against this process's registry."""
    return serde.resolve(registry(), **arguments)


def v2_error(exc: Exception, *, schema_type: str, where: str) -> ApiError:
    """A schema failure of the key or value ``where`` names, as Confluent's v2 proxy
    answers it."""
    if isinstance(exc, InvalidSchema):
        return Unprocessable(f"Invalid schema: {where}: {exc}", error_code=42205)
    if isinstance(exc, RegistryError):
        return ApiError(
            f"Schema registration or lookup failed: {where}: {exc.message}",
            error_code=40801,
            status_code=408,
        )
    if isinstance(exc, serde.DataError):
        return Unprocessable(
            f"Conversion of JSON to {_READABLE[schema_type]} failed: {where}: {exc}",
            error_code=42203,
        )
    return Unprocessable(f"{where}: {exc}", error_code=42205)


def v3_error(exc: Exception, *, schema_type: str | None, where: str) -> ApiError:
    """A schema failure of the key or value ``where`` names, as Confluent's v3 produce
    answers it (per record)."""
    if isinstance(exc, InvalidSchema):
        return Unprocessable(f"Invalid schema: {where}: {exc}", error_code=42205)
    if isinstance(exc, RegistryError):
        if exc.http_status >= 500:
            return ApiError(
                f"{where}: {exc.message}", error_code=exc.error_code, status_code=exc.http_status
            )
        return Unprocessable(f"Error serializing message. {where}: {exc.message}", error_code=42207)
    if isinstance(exc, serde.DataError):
        kind = _READABLE.get(schema_type or "", "schema'd")
        return BadRequest(f"Failed to parse {kind} data: {where}: {exc}")
    return BadRequest(f"{where}: {exc}")


def read_record(data: bytes | None, fmt: str) -> Any:
    """A record's key or value as a v2 consumer of embedded format ``fmt`` (``avro``,
    ``jsonschema``, ``protobuf``) returns it: decoded through the schema its frame names."""
    if data is None:
        return None
    expected = schema_type(fmt)
    try:
        found = registry()
        schema_id, payload = serde.unframe(data)
        schema = found.parsed(schema_id)
        if schema.schema_type != expected:
            raise serde.DataError(f"its schema {schema_id} is {schema.schema_type}, not {expected}")
        return serde.decode(schema, payload)
    except (RegistryError, serde.DataError) as exc:
        message = exc.message if isinstance(exc, RegistryError) else str(exc)
        raise Unprocessable(
            f"a record cannot be read as {fmt}: {message}; read it with a binary-format consumer",
            error_code=42205,
        ) from None


# After the registry could not be opened, display decoding is skipped this long.
REGISTRY_RETRY_S = 30.0
_registry_down_until = 0.0


def decode_framed(data: bytes) -> tuple[dict[str, Any], Any] | None:
    """A record in Confluent's framing, decoded for people to read: (``{"id", "type",
    "subjects"}``, its JSON value); None when ``data`` is not framed, names a schema the
    registry does not hold, does not decode with it, or the registry cannot be read (the
    caller then shows the bytes as they are)."""
    global _registry_down_until
    if len(data) < 5 or data[0] != serde.MAGIC or time.monotonic() < _registry_down_until:
        return None
    try:
        found = registry()
    except RegistryError:
        # A page of framed records must not wait for the store once per record.
        _registry_down_until = time.monotonic() + REGISTRY_RETRY_S
        return None
    try:
        schema_id, payload = serde.unframe(data)
        schema = found.parsed(schema_id)
        value = serde.decode(schema, payload)
        subjects = found.schema_subjects(schema_id)
    except (RegistryError, serde.DataError):
        return None
    except Exception:  # a payload a decoder chokes on is shown as bytes, never an error page
        return None
    return {"id": schema_id, "type": schema.schema_type, "subjects": subjects}, value
