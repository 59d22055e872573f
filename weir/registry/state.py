"""The registry's materialized state: what the ``_schemas`` records say, applied one by one.

Theory of operation
-------------------
Every process holds a :class:`RegistryState` and feeds it every record of ``_schemas`` in
offset order (``weir.registry.store``'s reader thread; tests feed it directly). The state is
a pure function of the records it was given, so all processes that have read up to the same
offset agree on it. It answers the questions the service asks; it never decides anything.

* ``subjects``: subject -> version -> :class:`Version` (schema id, soft-deleted flag).
  A ``SCHEMA`` tombstone removes a version (hard delete); ``DELETE_SUBJECT`` soft-deletes
  every version up to the one it names (Confluent's soft delete of a subject).
* ``schemas``: id -> :class:`Schema` (type, text, references). The same schema under two
  subjects has one id; an id stays while any version (even soft-deleted) uses it.
* ``max_id``: the highest id any record ever carried, kept even after the record that carried
  it was hard-deleted, so an id is never handed out twice by this process's reckoning (the
  lease keeps a copy in Redis for the time after compaction: ``weir.registry.lease``).
* ``config`` and ``mode``: per subject and global (key None).
* ``epoch``: the highest writer epoch seen (record header ``weir.epoch``). A record from a
  lower epoch than one already applied was written by a writer that had lost its lease: it is
  *fenced*, i.e. ignored, by every process alike (``apply`` returns False).

Confluent's rules the state encodes: versions of a subject increase; the next version is one
above the highest version the subject still has, soft-deleted ones included (so soft-deleted
version numbers are never reused; after a hard delete of the newest versions they may be);
ids never decrease.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from weir.registry.records import (
    ConfigRecord,
    DeleteSubjectRecord,
    ModeRecord,
    NoopRecord,
    Record,
    Reference,
    SchemaRecord,
)

__all__ = ["DEFAULT_COMPATIBILITY", "DEFAULT_MODE", "RegistryState", "Schema", "Version"]

DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"

# (schemaType, schema text, references as (name, subject, version)): one global id each.
Identity = tuple[str, str, tuple[tuple[str, str, int], ...]]


@dataclass(frozen=True, slots=True)
class Schema:
    """A schema by id: what ``/schemas/ids/{id}`` answers."""

    schema_id: int
    schema_type: str
    schema: str
    references: tuple[Reference, ...]

    @property
    def identity(self) -> Identity:
        refs = tuple((r.name, r.subject, r.version) for r in self.references)
        return (self.schema_type, self.schema, refs)


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a subject."""

    subject: str
    version: int
    schema_id: int
    deleted: bool


@dataclass
class RegistryState:
    """Subjects, versions, schemas, config and mode as the records so far say."""

    subjects: dict[str, dict[int, Version]] = field(default_factory=dict)
    schemas: dict[int, Schema] = field(default_factory=dict)
    config: dict[str | None, str] = field(default_factory=dict)
    mode: dict[str | None, str] = field(default_factory=dict)
    max_id: int = 0
    epoch: int = 0
    _ids: dict[Identity, int] = field(default_factory=dict)

    # -- applying records ------------------------------------------------------------------

    def apply(self, record: Record | None, epoch: int | None = None) -> bool:
        """Apply one record written at lease ``epoch`` (None: a writer that is not Weir,
        never fenced). False when the record is fenced and was ignored."""
        if epoch is not None:
            if epoch < self.epoch:
                return False
            self.epoch = epoch
        match record:
            case SchemaRecord(schema=None):
                self._remove_version(record.subject, record.version)
            case SchemaRecord():
                self._put_version(record)
            case DeleteSubjectRecord():
                versions = self.subjects.get(record.subject, {})
                for number, version in list(versions.items()):
                    if number <= record.version and not version.deleted:
                        versions[number] = Version(version.subject, number, version.schema_id, True)
            case ConfigRecord():
                _set(self.config, record.subject, record.level)
            case ModeRecord():
                _set(self.mode, record.subject, record.mode)
            case NoopRecord() | None:
                pass
        return True

    def _put_version(self, record: SchemaRecord) -> None:
        assert record.schema is not None
        schema = Schema(record.schema_id, record.schema_type, record.schema, record.references)
        previous = self.subjects.get(record.subject, {}).get(record.version)
        self.subjects.setdefault(record.subject, {})[record.version] = Version(
            record.subject, record.version, record.schema_id, record.deleted
        )
        if record.schema_id not in self.schemas:
            self.schemas[record.schema_id] = schema
            self._ids.setdefault(schema.identity, record.schema_id)
        self.max_id = max(self.max_id, record.schema_id)
        if previous is not None and previous.schema_id != record.schema_id:
            self._collect(previous.schema_id)

    def _remove_version(self, subject: str, number: int) -> None:
        versions = self.subjects.get(subject)
        if versions is None or number not in versions:
            return
        removed = versions.pop(number)
        if not versions:
            del self.subjects[subject]
        self._collect(removed.schema_id)

    def _collect(self, schema_id: int) -> None:
        """Forget schema ``schema_id`` once no version uses it (after hard deletes)."""
        if any(v.schema_id == schema_id for v in self.all_versions()):
            return
        schema = self.schemas.pop(schema_id, None)
        if schema is not None and self._ids.get(schema.identity) == schema_id:
            del self._ids[schema.identity]

    def current(self, record: Record) -> Record | None:
        """The record that says what this state holds under ``record``'s key -- what a
        writer writes to overwrite a fenced record, so that compaction drops it for good.
        None for a key that needs nothing (``NOOP``)."""
        match record:
            case SchemaRecord():
                version = self.subjects.get(record.subject, {}).get(record.version)
                if version is None:
                    return SchemaRecord(record.subject, record.version)
                schema = self.schemas[version.schema_id]
                return SchemaRecord(
                    subject=record.subject,
                    version=record.version,
                    schema_id=version.schema_id,
                    schema=schema.schema,
                    schema_type=schema.schema_type,
                    references=schema.references,
                    deleted=version.deleted,
                )
            case ConfigRecord():
                return ConfigRecord(record.subject, self.config.get(record.subject))
            case ModeRecord():
                return ModeRecord(record.subject, self.mode.get(record.subject))
            case DeleteSubjectRecord():
                # The longest run of soft-deleted versions from the first: re-applying it
                # changes nothing (0 when the first version is live).
                upto = 0
                for v in self.versions(record.subject, deleted=True):
                    if not v.deleted:
                        break
                    upto = v.version
                return DeleteSubjectRecord(record.subject, upto)
        return None

    # -- questions -------------------------------------------------------------------------

    def all_versions(self) -> Iterator[Version]:
        for versions in self.subjects.values():
            yield from versions.values()

    def versions(self, subject: str, *, deleted: bool = False) -> list[Version]:
        """The subject's versions, oldest first; soft-deleted ones only when ``deleted``."""
        found = self.subjects.get(subject, {})
        return [found[n] for n in sorted(found) if deleted or not found[n].deleted]

    def subject_names(self, *, deleted: bool = False) -> list[str]:
        """Subjects with a live version (and with only soft-deleted ones when ``deleted``)."""
        return sorted(s for s in self.subjects if self.versions(s, deleted=deleted))

    def next_version(self, subject: str) -> int:
        """The version number the subject's next registration gets."""
        return max(self.subjects.get(subject, ()), default=0) + 1

    def id_of(self, identity: Identity) -> int | None:
        """The id a schema already has anywhere (any subject, soft-deleted included)."""
        return self._ids.get(identity)

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of the schemas in live versions that reference ``subject`` ``version``."""
        ids = {v.schema_id for v in self.all_versions() if not v.deleted}
        return sorted(
            i
            for i in ids
            if any(
                r.subject == subject and r.version == version for r in self.schemas[i].references
            )
        )

    def usages(self, schema_id: int, *, deleted: bool = False) -> list[Version]:
        """Every (subject, version) that uses ``schema_id``."""
        found = [
            v
            for v in self.all_versions()
            if v.schema_id == schema_id and (deleted or not v.deleted)
        ]
        return sorted(found, key=lambda v: (v.subject, v.version))

    def compatibility(self, subject: str | None) -> str | None:
        """The level set for ``subject`` (None: global), if any."""
        return self.config.get(subject)

    def effective_compatibility(self, subject: str | None) -> str:
        if subject is not None and subject in self.config:
            return self.config[subject]
        return self.config.get(None, DEFAULT_COMPATIBILITY)

    def effective_mode(self, subject: str | None) -> str:
        if subject is not None and subject in self.mode:
            return self.mode[subject]
        return self.mode.get(None, DEFAULT_MODE)


def _set(table: dict[str | None, str], key: str | None, value: str | None) -> None:
    if value is None:
        table.pop(key, None)
    else:
        table[key] = value
