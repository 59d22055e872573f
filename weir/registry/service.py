"""The registry's operations, one per Confluent Schema Registry endpoint.

:class:`SchemaRegistry` is what the API calls: each method returns the JSON body Confluent
answers (a dict, a list, an int) or raises :class:`~weir.registry.errors.RegistryError` with
Confluent's status, code and message. It knows Confluent's rules (modes, soft before hard
delete, references, compatibility at the effective level, global ids) and nothing about
storage: reads look at the backend's state, writes are transactions whose ``decide``
function runs on a current state (``weir.registry.backend``).

Schemas are parsed by ``weir.registry.formats``; a parsed schema is cached by id (a stored
schema never changes), so compatibility checks against a subject's history parse each
version once per process.

Versions in arguments are what the URL holds: an int, or ``"latest"`` / ``-1`` for the
newest live version; anything else is 42202.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from weir.registry import errors
from weir.registry.backend import Backend, Txn
from weir.registry.formats import (
    COMPATIBILITY_LEVELS,
    SCHEMA_TYPES,
    InvalidSchema,
    ParsedSchema,
    ResolvedReference,
    check,
    parse,
)
from weir.registry.records import (
    ConfigRecord,
    DeleteSubjectRecord,
    ModeRecord,
    Reference,
    SchemaRecord,
)
from weir.registry.state import RegistryState, Schema, Version

__all__ = ["LATEST", "MODES", "SchemaRegistry", "parse_version"]

LATEST = -1
MAX_VERSION = 2**31 - 1
MODES = ("READWRITE", "READONLY", "IMPORT")
# How deep references may nest before the registry calls the schema invalid (a cycle cannot
# be built through the API, but a foreign writer's records could hold one).
MAX_REFERENCE_DEPTH = 32


def parse_version(version: int | str) -> int:
    """The version a URL names: a number in [1, 2^31-1], or :data:`LATEST` for ``latest``
    and ``-1``; 42202 otherwise."""
    if isinstance(version, str):
        if version == "latest":
            return LATEST
        try:
            number = int(version)
        except ValueError:
            raise errors.invalid_version(version) from None
    else:
        number = version
    if number == LATEST or 1 <= number <= MAX_VERSION:
        return number
    raise errors.invalid_version(version)


def _references(raw: Sequence[Reference | dict[str, Any]]) -> tuple[Reference, ...]:
    refs = []
    for r in raw:
        if isinstance(r, Reference):
            refs.append(r)
            continue
        try:
            refs.append(Reference(str(r["name"]), str(r["subject"]), int(r["version"])))
        except (KeyError, TypeError, ValueError):
            raise errors.invalid_schema(
                f"references, details: {r!r} is not a reference "
                '({"name": ..., "subject": ..., "version": ...})'
            ) from None
    return tuple(refs)


def _schema_body(schema: Schema, text: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if schema.schema_type != "AVRO":
        body["schemaType"] = schema.schema_type
    if schema.references:
        body["references"] = [r.to_json() for r in schema.references]
    body["schema"] = schema.schema if text is None else text
    return body


class SchemaRegistry:
    """Confluent Schema Registry's operations over a :class:`~weir.registry.backend.Backend`."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._parsed: dict[tuple[int, str, bool], ParsedSchema] = {}
        self._parsed_lock = threading.Lock()

    # -- schemas ---------------------------------------------------------------------------

    def schema_types(self) -> list[str]:
        """``GET /schemas/types``."""
        return list(SCHEMA_TYPES)

    def schema_by_id(
        self, schema_id: int, *, fmt: str | None = None, fetch_max_id: bool = False
    ) -> dict[str, Any]:
        """``GET /schemas/ids/{id}[?format=&fetchMaxId=true]``: ``{"schemaType"?,
        "references"?, "schema", "maxId"?}``; ``/schema`` is its ``"schema"``. 40403."""
        with self.backend.read() as state:
            schema = state.schemas.get(schema_id)
            if schema is None:
                raise errors.schema_not_found(schema_id)
            text = self._stored(state, schema).formatted(fmt) if fmt else None
            body = _schema_body(schema, text)
            if fetch_max_id:
                body["maxId"] = state.max_id
            return body

    def parsed(self, schema_id: int) -> ParsedSchema:
        """The schema with id ``schema_id``, parsed with its references (what serializers
        need, :mod:`weir.registry.serde`); 40403."""
        with self.backend.read() as state:
            schema = state.schemas.get(schema_id)
            if schema is None:
                raise errors.schema_not_found(schema_id)
            return self._stored(state, schema)

    def schema_subjects(self, schema_id: int, *, deleted: bool = False) -> list[str]:
        """``GET /schemas/ids/{id}/subjects``; 40403."""
        with self.backend.read() as state:
            if schema_id not in state.schemas:
                raise errors.schema_not_found(schema_id)
            return sorted({v.subject for v in state.usages(schema_id, deleted=deleted)})

    def schema_versions(self, schema_id: int, *, deleted: bool = False) -> list[dict[str, Any]]:
        """``GET /schemas/ids/{id}/versions``: ``[{"subject", "version"}]``; 40403."""
        with self.backend.read() as state:
            if schema_id not in state.schemas:
                raise errors.schema_not_found(schema_id)
            return [
                {"subject": v.subject, "version": v.version}
                for v in state.usages(schema_id, deleted=deleted)
            ]

    # -- subjects and versions -------------------------------------------------------------

    def subjects(
        self, *, deleted: bool = False, deleted_only: bool = False, prefix: str = ""
    ) -> list[str]:
        """``GET /subjects[?deleted=true|deletedOnly=true|subjectPrefix=]``."""
        with self.backend.read() as state:
            names = state.subject_names(deleted=deleted or deleted_only)
            if deleted_only:
                live = set(state.subject_names())
                names = [n for n in names if n not in live]
            return [n for n in names if n.startswith(prefix)]

    def versions(
        self, subject: str, *, deleted: bool = False, deleted_only: bool = False
    ) -> list[int]:
        """``GET /subjects/{s}/versions``; 40401 when the subject has none to show."""
        with self.backend.read() as state:
            found = state.versions(subject, deleted=deleted or deleted_only)
            if deleted_only:
                found = [v for v in found if v.deleted]
            if not found:
                raise errors.subject_not_found(subject)
            return [v.version for v in found]

    def version(
        self,
        subject: str,
        version: int | str,
        *,
        deleted: bool = False,
        fmt: str | None = None,
    ) -> dict[str, Any]:
        """``GET /subjects/{s}/versions/{v}``: ``{"subject", "version", "id",
        "schemaType"?, "references"?, "schema"}``; ``/schema`` is its ``"schema"``. 40401,
        40402, 42202."""
        number = parse_version(version)
        with self.backend.read() as state:
            found = self._find(state, subject, number, deleted=deleted)
            schema = state.schemas[found.schema_id]
            text = self._stored(state, schema).formatted(fmt) if fmt else None
            return {
                "subject": subject,
                "version": found.version,
                "id": found.schema_id,
                **_schema_body(schema, text),
            }

    def referenced_by(self, subject: str, version: int | str) -> list[int]:
        """``GET /subjects/{s}/versions/{v}/referencedby``: ids of the schemas that
        reference it. 40401, 40402, 42202."""
        number = parse_version(version)
        with self.backend.read() as state:
            found = self._find(state, subject, number, deleted=True)
            return state.referenced_by(subject, found.version)

    def _find(self, state: RegistryState, subject: str, number: int, *, deleted: bool) -> Version:
        candidates = state.versions(subject, deleted=deleted)
        if not candidates:
            raise errors.subject_not_found(subject)
        if number == LATEST:
            return candidates[-1]
        for v in candidates:
            if v.version == number:
                return v
        raise errors.version_not_found(number)

    # -- register and look up --------------------------------------------------------------

    def register(
        self,
        subject: str,
        schema: str,
        *,
        schema_type: str = "AVRO",
        references: Sequence[Reference | dict[str, Any]] = (),
        normalize: bool = False,
        schema_id: int | None = None,
        version: int | None = None,
    ) -> dict[str, Any]:
        """``POST /subjects/{s}/versions``: ``{"id"}``. Idempotent: a schema the subject
        already has live answers its id. ``schema_id``/``version`` (both optional, with an
        id) only in IMPORT mode. 409, 42201, 42205, 42207."""
        refs = _references(references)
        with self.backend.read() as state:
            # The common case, a producer re-registering its schema, writes nothing.
            parsed = self._parse(state, schema_type, schema, refs, normalize)
            existing = self._match(state, subject, parsed, normalize, deleted=False)
            if existing is not None and schema_id in (None, existing.schema_id):
                mode = state.effective_mode(subject)
                if mode != "READONLY":
                    return {"id": existing.schema_id}

        def decide(txn: Txn) -> dict[str, Any]:
            state = txn.state
            mode = state.effective_mode(subject)
            if schema_id is not None:
                if mode != "IMPORT":
                    raise errors.not_permitted(f"Subject {subject} is not in import mode")
            elif mode != "READWRITE":
                raise errors.not_permitted(f"Subject {subject} is not in read-write mode")
            parsed = self._parse(state, schema_type, schema, refs, normalize)
            existing = self._match(state, subject, parsed, normalize, deleted=False)
            if existing is not None:
                if schema_id not in (None, existing.schema_id):
                    raise errors.id_does_not_match(schema_id)
                return {"id": existing.schema_id}
            identity = parsed.identity()
            if schema_id is None:
                live = state.versions(subject)
                previous = [self._stored(state, state.schemas[v.schema_id]) for v in live]
                try:
                    messages = check(state.effective_compatibility(subject), parsed, previous)
                except InvalidSchema as exc:
                    raise errors.invalid_schema(f"of type {schema_type}, details: {exc}") from None
                if messages:
                    raise errors.incompatible(subject, messages)
                new_id = state.id_of(identity) or txn.new_id()
                new_version = state.next_version(subject)
            else:
                taken = state.schemas.get(schema_id)
                if taken is not None and taken.identity != identity:
                    raise errors.id_does_not_match(schema_id)
                new_id = schema_id
                new_version = version if version is not None else state.next_version(subject)
                if new_version in state.subjects.get(subject, {}):
                    raise errors.not_permitted(
                        f"Overwrite new schema with version {new_version} is not permitted."
                    )
            txn.write(
                SchemaRecord(
                    subject=subject,
                    version=new_version,
                    schema_id=new_id,
                    schema=parsed.canonical(),
                    schema_type=parsed.schema_type,
                    # As resolved: a reference to "latest" (-1) is stored as the version
                    # it named when the schema was registered.
                    references=tuple(
                        Reference(r.name, r.subject, r.version) for r in parsed.references
                    ),
                )
            )
            return {"id": new_id}

        return self.backend.transact(decide)

    def lookup(
        self,
        subject: str,
        schema: str,
        *,
        schema_type: str = "AVRO",
        references: Sequence[Reference | dict[str, Any]] = (),
        normalize: bool = False,
        deleted: bool = False,
    ) -> dict[str, Any]:
        """``POST /subjects/{s}``: the version holding this schema, as :meth:`version`
        answers it. 40401, 40403 ("Schema not found"), 42201."""
        refs = _references(references)
        with self.backend.read() as state:
            if not state.versions(subject, deleted=deleted):
                raise errors.subject_not_found(subject)
            parsed = self._parse(state, schema_type, schema, refs, normalize)
            found = self._match(state, subject, parsed, normalize, deleted=deleted)
            if found is None:
                raise errors.schema_not_found()
            return {
                "subject": subject,
                "version": found.version,
                "id": found.schema_id,
                **_schema_body(state.schemas[found.schema_id]),
            }

    def _match(
        self,
        state: RegistryState,
        subject: str,
        parsed: ParsedSchema,
        normalize: bool,
        *,
        deleted: bool,
    ) -> Version | None:
        """The newest version of ``subject`` that holds the same schema as ``parsed``."""
        identity = parsed.identity()
        for v in reversed(state.versions(subject, deleted=deleted)):
            stored = state.schemas[v.schema_id]
            if stored.identity == identity:
                return v
            if stored.schema_type != parsed.schema_type:
                continue
            # Records another writer stored need not hold canonical text: compare parsed.
            try:
                other = self._stored(state, stored, normalize=normalize)
            except errors.RegistryError:
                continue
            if other.identity() == identity:
                return v
        return None

    # -- parsing ---------------------------------------------------------------------------

    def _parse(
        self,
        state: RegistryState,
        schema_type: str,
        text: str,
        refs: tuple[Reference, ...],
        normalize: bool,
    ) -> ParsedSchema:
        """The schema a request sent, references resolved; 42201 when it is not valid."""
        resolved = self._resolve(state, refs, depth=0)
        try:
            parsed = parse(schema_type, text, resolved)
            return parsed.normalized() if normalize else parsed
        except InvalidSchema as exc:
            raise errors.invalid_schema(f"of type {schema_type}, details: {exc}") from None

    def _resolve(
        self, state: RegistryState, refs: tuple[Reference, ...], depth: int
    ) -> list[ResolvedReference]:
        if depth > MAX_REFERENCE_DEPTH:
            raise errors.invalid_schema("details: references nest too deep (a cycle?)")
        resolved = []
        for ref in refs:
            # A reference may name a soft-deleted version: schemas that use it stay readable.
            target = state.subjects.get(ref.subject, {}).get(ref.version)
            if ref.version == LATEST:
                live = state.versions(ref.subject)
                target = live[-1] if live else None
            if target is None:
                raise errors.invalid_schema(
                    f"details: reference '{ref.name}' names subject '{ref.subject}' version "
                    f"{ref.version}, which does not exist"
                )
            schema = state.schemas[target.schema_id]
            parsed = self._stored(state, schema, depth=depth + 1)
            resolved.append(ResolvedReference(ref.name, ref.subject, target.version, parsed))
        return resolved

    def _stored(
        self, state: RegistryState, schema: Schema, *, normalize: bool = False, depth: int = 0
    ) -> ParsedSchema:
        """A stored schema, parsed (cached by id)."""
        key = (schema.schema_id, schema.schema, normalize)
        with self._parsed_lock:
            cached = self._parsed.get(key)
        if cached is not None:
            return cached
        resolved = self._resolve(state, schema.references, depth)
        try:
            parsed = parse(schema.schema_type, schema.schema, resolved)
            if normalize:
                parsed = parsed.normalized()
        except InvalidSchema as exc:
            raise errors.invalid_schema(
                f"of type {schema.schema_type} (stored as id {schema.schema_id}), details: {exc}"
            ) from None
        with self._parsed_lock:
            self._parsed[key] = parsed
        return parsed

    # -- deletes ---------------------------------------------------------------------------

    def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        """``DELETE /subjects/{s}[?permanent=true]``: the versions deleted. Soft first, then
        hard. 40401, 40404, 40405, 42205, 42206."""

        def decide(txn: Txn) -> list[int]:
            state = txn.state
            everything = state.versions(subject, deleted=True)
            if not everything:
                raise errors.subject_not_found(subject)
            _writable(state, subject)
            live = state.versions(subject)
            if permanent:
                if live:
                    raise errors.subject_not_soft_deleted(subject)
                _unreferenced(state, everything)
                for v in everything:
                    txn.write(SchemaRecord(subject, v.version))
                return [v.version for v in everything]
            if not live:
                raise errors.subject_soft_deleted(subject)
            _unreferenced(state, live)
            txn.write(DeleteSubjectRecord(subject, live[-1].version))
            _drop_subject_settings(txn, subject)
            return [v.version for v in live]

        return self.backend.transact(decide)

    def delete_version(self, subject: str, version: int | str, *, permanent: bool = False) -> int:
        """``DELETE /subjects/{s}/versions/{v}[?permanent=true]``: the version deleted.
        ``latest`` is the newest live version (the newest of all when permanent). 40401,
        40402, 40406, 40407, 42202, 42205, 42206."""
        number = parse_version(version)

        def decide(txn: Txn) -> int:
            state = txn.state
            candidates = state.versions(subject, deleted=permanent)
            if not candidates:
                raise errors.subject_not_found(subject)
            _writable(state, subject)
            if number == LATEST:
                target = candidates[-1]
            else:
                target = state.subjects[subject].get(number)  # type: ignore[assignment]
                if target is None:
                    raise errors.version_not_found(number)
            if permanent and not target.deleted:
                raise errors.version_not_soft_deleted(subject, target.version)
            if not permanent and target.deleted:
                raise errors.version_soft_deleted(subject, target.version)
            _unreferenced(state, [target])
            if permanent:
                txn.write(SchemaRecord(subject, target.version))
            else:
                schema = state.schemas[target.schema_id]
                txn.write(
                    SchemaRecord(
                        subject=subject,
                        version=target.version,
                        schema_id=target.schema_id,
                        schema=schema.schema,
                        schema_type=schema.schema_type,
                        references=schema.references,
                        deleted=True,
                    )
                )
                if len(state.versions(subject)) == 1:
                    # The subject's last live version: its settings go with it (Confluent).
                    _drop_subject_settings(txn, subject)
            return target.version

        return self.backend.transact(decide)

    # -- config ----------------------------------------------------------------------------

    def get_config(
        self, subject: str | None = None, *, default_to_global: bool = False
    ) -> dict[str, Any]:
        """``GET /config`` and ``GET /config/{s}[?defaultToGlobal=true]``:
        ``{"compatibilityLevel"}``; 40408 for a subject without a level of its own."""
        with self.backend.read() as state:
            if subject is not None and not default_to_global:
                level = state.compatibility(subject)
                if level is None:
                    raise errors.compatibility_not_configured(subject)
                return {"compatibilityLevel": level}
            return {"compatibilityLevel": state.effective_compatibility(subject)}

    def set_config(self, subject: str | None, compatibility: str) -> dict[str, Any]:
        """``PUT /config[/{s}]`` with ``{"compatibility"}``: ``{"compatibility"}``; 42203."""
        level = str(compatibility).upper() if compatibility is not None else ""
        if level not in COMPATIBILITY_LEVELS:
            raise errors.invalid_compatibility_level()

        def decide(txn: Txn) -> dict[str, Any]:
            txn.write(ConfigRecord(subject, level))
            return {"compatibility": level}

        return self.backend.transact(decide)

    def delete_config(self, subject: str | None = None) -> dict[str, Any]:
        """``DELETE /config[/{s}]``: the level that was set, ``{"compatibilityLevel"}``; the
        global level returns to its default. 40401, 40408."""

        def decide(txn: Txn) -> dict[str, Any]:
            state = txn.state
            if subject is None:
                previous = state.effective_compatibility(None)
            else:
                found = state.compatibility(subject)
                if found is None:
                    if not state.versions(subject, deleted=True):
                        raise errors.subject_not_found(subject)
                    raise errors.compatibility_not_configured(subject)
                previous = found
            txn.write(ConfigRecord(subject, None))
            return {"compatibilityLevel": previous}

        return self.backend.transact(decide)

    # -- mode ------------------------------------------------------------------------------

    def get_mode(
        self, subject: str | None = None, *, default_to_global: bool = False
    ) -> dict[str, Any]:
        """``GET /mode`` and ``GET /mode/{s}[?defaultToGlobal=true]``: ``{"mode"}``; 40409
        for a subject without a mode of its own."""
        with self.backend.read() as state:
            if subject is not None and not default_to_global and subject not in state.mode:
                raise errors.mode_not_configured(subject)
            return {"mode": state.effective_mode(subject)}

    def set_mode(self, subject: str | None, mode: str, *, force: bool = False) -> dict[str, Any]:
        """``PUT /mode[/{s}][?force=true]`` with ``{"mode"}``: ``{"mode"}``. IMPORT only
        where there are no schemas yet, unless ``force``. 42204, 42205."""
        wanted = str(mode).upper() if mode is not None else ""
        if wanted not in MODES:
            raise errors.invalid_mode()

        def decide(txn: Txn) -> dict[str, Any]:
            state = txn.state
            if wanted == "IMPORT" and not force:
                has = state.subjects if subject is None else state.subjects.get(subject)
                if has:
                    raise errors.not_permitted("Cannot import since found existing subjects")
            txn.write(ModeRecord(subject, wanted))
            return {"mode": wanted}

        return self.backend.transact(decide)

    def delete_mode(self, subject: str | None = None) -> dict[str, Any]:
        """``DELETE /mode[/{s}]``: the mode that was set, ``{"mode"}``; the global mode
        returns to READWRITE. 40401, 40409."""

        def decide(txn: Txn) -> dict[str, Any]:
            state = txn.state
            if subject is None:
                previous = state.effective_mode(None)
            else:
                if subject not in state.mode:
                    if not state.versions(subject, deleted=True):
                        raise errors.subject_not_found(subject)
                    raise errors.mode_not_configured(subject)
                previous = state.mode[subject]
            txn.write(ModeRecord(subject, None))
            return {"mode": previous}

        return self.backend.transact(decide)

    # -- compatibility ---------------------------------------------------------------------

    def test_compatibility(
        self,
        subject: str,
        schema: str,
        *,
        version: int | str | None = LATEST,
        schema_type: str = "AVRO",
        references: Sequence[Reference | dict[str, Any]] = (),
        normalize: bool = False,
        verbose: bool = False,
    ) -> dict[str, Any]:
        """``POST /compatibility/subjects/{s}/versions/{v}`` (``version`` None:
        ``.../versions``, every live version at the subject's level):
        ``{"is_compatible", "messages"?}`` (messages with ``verbose``). 40401, 40402, 42201,
        42202."""
        refs = _references(references)
        number = parse_version(version) if version is not None else None
        with self.backend.read() as state:
            parsed = self._parse(state, schema_type, schema, refs, normalize)
            live = state.versions(subject)
            if number is None:
                against = live
            else:
                against = [self._find(state, subject, number, deleted=False)]
            previous = [self._stored(state, state.schemas[v.schema_id]) for v in against]
            try:
                messages = check(state.effective_compatibility(subject), parsed, previous)
            except InvalidSchema as exc:
                raise errors.invalid_schema(f"of type {schema_type}, details: {exc}") from None
        body: dict[str, Any] = {"is_compatible": not messages}
        if verbose:
            body["messages"] = messages
        return body


def _writable(state: RegistryState, subject: str) -> None:
    if state.effective_mode(subject) == "READONLY":
        raise errors.not_permitted(f"Subject {subject} is in read-only mode")


def _unreferenced(state: RegistryState, versions: Sequence[Version]) -> None:
    """42206 when another live schema references one of ``versions``."""
    for v in versions:
        if state.referenced_by(v.subject, v.version):
            raise errors.reference_exists(v.subject, v.version)


def _drop_subject_settings(txn: Txn, subject: str) -> None:
    if subject in txn.state.config:
        txn.write(ConfigRecord(subject, None))
    if subject in txn.state.mode:
        txn.write(ModeRecord(subject, None))
