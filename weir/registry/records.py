"""The records of the ``_schemas`` topic, byte for byte as Confluent Schema Registry and
Karapace write them, so either can read a Weir cluster's registry (and Weir theirs).

Every record's key and value are compact JSON (no spaces); the key names the record's kind
(``keytype``) and ``magic`` is part of the key, so compaction keeps exactly one record per
subject version, per config scope and per mode scope. Key fields come in a fixed order
(Confluent's ``@JsonPropertyOrder``), which matters: compaction compares key *bytes*.

* ``SCHEMA``: key ``{"keytype":"SCHEMA","subject":S,"version":V,"magic":1}``, value
  ``{"subject","version","id","schema","schemaType"?,"references"?,"deleted"}``; null (a
  tombstone) after a hard delete.
* ``CONFIG``: key ``{"keytype":"CONFIG","subject":S|null,"magic":0}``, value
  ``{"compatibilityLevel":L}``; null unsets it.
* ``MODE``: key ``{"keytype":"MODE","subject":S|null,"magic":0}``, value ``{"mode":M}``;
  null unsets it.
* ``DELETE_SUBJECT``: key ``{"keytype":"DELETE_SUBJECT","subject":S,"magic":0}``, value
  ``{"subject","version"}``: every version up to ``version`` is soft-deleted.
* ``NOOP``: key ``{"keytype":"NOOP","magic":0}``, value null.

``schemaType`` is omitted for AVRO and ``references`` when there are none, as Confluent
does. The global config and mode keys carry ``"subject":null`` (Karapace's and older
Confluent's spelling; newer Confluent omits the field): the reader accepts both.

Weir adds one Kafka record *header*, ``weir.epoch`` (the writer's lease epoch, decimal
ASCII), which the state uses to ignore a fenced writer's records (``weir.registry.store``
explains why). Tools that read only keys and values never see it.

This module is pure: :func:`encode` turns a :data:`Record` into key and value bytes,
:func:`decode` turns bytes back (``None`` for a key Weir does not know, e.g. Confluent's
newer ``CONTEXT`` or ``CLEAR_SUBJECT`` kinds).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EPOCH_HEADER",
    "ConfigRecord",
    "DeleteSubjectRecord",
    "ModeRecord",
    "NoopRecord",
    "Record",
    "Reference",
    "SchemaRecord",
    "decode",
    "encode",
]

EPOCH_HEADER = "weir.epoch"


@dataclass(frozen=True, slots=True)
class Reference:
    """A schema reference as the API and the topic spell it: ``{"name","subject","version"}``."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True, slots=True)
class SchemaRecord:
    """One subject version. ``schema`` None is the tombstone of a hard delete (the other
    value fields are then unknown and left at their defaults)."""

    subject: str
    version: int
    schema_id: int = -1
    schema: str | None = None
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = ()
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """The compatibility level of a subject (``subject`` None: the global one); ``level``
    None unsets it (a tombstone)."""

    subject: str | None
    level: str | None


@dataclass(frozen=True, slots=True)
class ModeRecord:
    """The mode of a subject (``subject`` None: the global one); ``mode`` None unsets it."""

    subject: str | None
    mode: str | None


@dataclass(frozen=True, slots=True)
class DeleteSubjectRecord:
    """Soft delete of a subject: every version up to ``version`` is deleted."""

    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class NoopRecord:
    """Nothing; a writer's marker (its epoch travels in the header)."""


Record = SchemaRecord | ConfigRecord | ModeRecord | DeleteSubjectRecord | NoopRecord


def _dumps(obj: dict[str, Any]) -> bytes:
    # Jackson's compact form: no spaces, non-ASCII kept as UTF-8.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def encode(record: Record) -> tuple[bytes, bytes | None]:
    """The key and value bytes of ``record`` (value None: a tombstone)."""
    match record:
        case SchemaRecord():
            key = {
                "keytype": "SCHEMA",
                "subject": record.subject,
                "version": record.version,
                "magic": 1,
            }
            if record.schema is None:
                return _dumps(key), None
            value: dict[str, Any] = {
                "subject": record.subject,
                "version": record.version,
                "id": record.schema_id,
                "schema": record.schema,
            }
            if record.schema_type != "AVRO":
                value["schemaType"] = record.schema_type
            if record.references:
                value["references"] = [r.to_json() for r in record.references]
            value["deleted"] = record.deleted
            return _dumps(key), _dumps(value)
        case ConfigRecord():
            key = {"keytype": "CONFIG", "subject": record.subject, "magic": 0}
            if record.level is None:
                return _dumps(key), None
            return _dumps(key), _dumps({"compatibilityLevel": record.level})
        case ModeRecord():
            key = {"keytype": "MODE", "subject": record.subject, "magic": 0}
            if record.mode is None:
                return _dumps(key), None
            return _dumps(key), _dumps({"mode": record.mode})
        case DeleteSubjectRecord():
            key = {"keytype": "DELETE_SUBJECT", "subject": record.subject, "magic": 0}
            return _dumps(key), _dumps({"subject": record.subject, "version": record.version})
        case NoopRecord():
            return _dumps({"keytype": "NOOP", "magic": 0}), None
    raise TypeError(f"not a registry record: {record!r}")


class UnreadableRecord(ValueError):
    """A ``_schemas`` record whose key or value is not what its keytype promises."""


def decode(key: bytes | None, value: bytes | None) -> Record | None:
    """The record ``key`` and ``value`` hold; None for a kind Weir does not use;
    :class:`UnreadableRecord` for bytes that are not a registry record at all."""
    try:
        k = json.loads(key) if key else None
        v = json.loads(value) if value is not None else None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UnreadableRecord(f"not JSON: {exc}") from exc
    if not isinstance(k, dict) or (v is not None and not isinstance(v, dict)):
        raise UnreadableRecord("key and value must be JSON objects")
    try:
        return _decode(k, v)
    except (KeyError, TypeError, ValueError) as exc:
        raise UnreadableRecord(f"{k.get('keytype')} record: {exc!r}") from exc


def _decode(k: dict[str, Any], v: dict[str, Any] | None) -> Record | None:
    keytype = k.get("keytype")
    if keytype == "SCHEMA":
        subject, version = str(k["subject"]), int(k["version"])
        if v is None:
            return SchemaRecord(subject, version)
        refs = tuple(
            Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
            for r in v.get("references") or ()
        )
        return SchemaRecord(
            subject=subject,
            version=version,
            schema_id=int(v["id"]),
            schema=str(v["schema"]),
            schema_type=str(v.get("schemaType") or "AVRO"),
            references=refs,
            deleted=bool(v.get("deleted", False)),
        )
    if keytype == "CONFIG":
        level = v.get("compatibilityLevel") if v is not None else None
        return ConfigRecord(k.get("subject"), str(level) if level is not None else None)
    if keytype == "MODE":
        mode = v.get("mode") if v is not None else None
        return ModeRecord(k.get("subject"), str(mode) if mode is not None else None)
    if keytype == "DELETE_SUBJECT":
        if v is None:
            return None
        return DeleteSubjectRecord(str(k["subject"]), int(v["version"]))
    if keytype == "NOOP":
        return NoopRecord()
    return None
