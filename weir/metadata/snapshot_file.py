"""Metadata snapshot files: export a cluster's whole metadata from Redis, import it into an
empty Redis (disaster recovery when the Redis deployment is lost).

Theory of operation
-------------------
**What is exported.** Every key of the cluster (``weir:{cluster_id}:``) is in one of two
classes (:func:`classify`; a test runs a real cluster and checks every key it wrote has a
class, so a new key cannot be forgotten silently):

* *metadata* -- what brokers and the control plane need to come back as they were: topics,
  topic ids and name collisions, config overrides (topic, broker, cluster-wide default) and
  their index, last known broker registrations, client quotas, ACLs, SCRAM credentials, the
  counters (``controller_epoch``, ``broker_epoch``, ``next_producer_id``, ``acls_version``),
  the metadata log's *position* (its last id, not its entries: the materialized state is the
  snapshot, the log only history, as in KRaft) and the operations API's bookkeeping
  (``ops:*``: tracked reassignments, throttle marks, the rebalance plan being executed);
* *runtime* -- state live processes re-create within seconds and that would be wrong after a
  restore anyway: broker and controller leases (``broker:<id>``, ``controller``), command
  streams and replies, ``partition_state`` / ``replica_state`` (leaders publish them every
  second), broker metrics, traffic and lag history, Channels keys, the rebalance lock, the
  coordination store's failover record (it belongs to the lost deployment) and
  ``metadata_log_trimmed`` (the restored log has no entries to have trimmed) and
  ``metadata_log_committed`` (readers confirm the restored log afresh, weir.metadata.quorum).

The export reads every metadata key in **one Lua script**, so the file is a consistent cut:
no write lands between reading ``topics`` and reading ``configs:*``.

**File format** (JSON, version 1; written to a temporary file in the same directory, fsynced,
then renamed, so a reader never sees half a file)::

    {"format": "weir-metadata-snapshot", "version": 1,
     "cluster_id": "weir", "exported_at_ms": 1700000000000,
     "source_incarnation": "<the store's incarnation>",
     "metadata_log_position": "<last id of metadata_log, 0-0 if none>",
     "keys": {"<name after the prefix>": {"type": "string" | "hash" | "set" | "list",
                                          "value": "..." | {..} | [..]}, ...}}

A reader refuses a newer version, another format, a key name that is not metadata and a
value of the wrong shape, each with a message naming the file and the problem.

**Import never goes backwards.** Between the export and the loss the lost deployment may
have elected controllers, leaders and brokers, and handed out producer ids, that clients
saw. So the import writes:

* ``controller_epoch``, ``broker_epoch`` and ``acls_version`` as exported + :data:`EPOCH_GAP`;
* ``next_producer_id`` as exported + :data:`PRODUCER_ID_GAP`;
* every partition's ``leader_epoch`` and ``partition_epoch`` as exported + :data:`EPOCH_GAP`
  (clients fence on leader epochs -- KIP-320 -- and a lower one would be refused; a leader
  still holding an older partition epoch has its ISR change rejected once and re-reads);
* a new ``incarnation``, so a broker that survived the loss treats the store as replaced:
  it re-reads everything and closes, never deletes, replicas the restored metadata lacks;
* the metadata log's last-generated id as exported (the stream is created empty with that
  id), so new entries get larger ids than any the exported state had.

The guarantee holds if fewer than the gap of each was used after the export: a scheduled
export (``controlplane.jobs``, hourly by default) keeps that true by a wide margin.

**Import refuses a target that is not empty** for the cluster id: any metadata key, or a live
broker or controller lease (brokers already running against the new deployment would have
registered and could auto-create topics with new ids over data on disk). It is all or
nothing: the check and the writes are one Lua script.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import redis

from weir.metadata.image import TopicImage
from weir.metadata.keys import KeyLayout
from weir.metadata.quorum import WriteNotReplicatedError, write_sync
from weir.metadata.redis_url import close_client, sync_client

__all__ = [
    "EPOCH_GAP",
    "FORMAT",
    "PRODUCER_ID_GAP",
    "VERSION",
    "ExportResult",
    "ImportResult",
    "SnapshotFileError",
    "SnapshotImportError",
    "TargetNotEmptyError",
    "classify",
    "export_document",
    "export_rotating",
    "export_to_file",
    "import_document",
    "import_from_file",
    "read_snapshot_file",
    "write_snapshot_file",
]

FORMAT = "weir-metadata-snapshot"
VERSION = 1
# How far the import moves epochs and version counters past the exported values.
EPOCH_GAP = 10_000
# How far it moves the producer id counter (ids are int64; clients may have seen ids handed
# out after the export, one per InitProducerId).
PRODUCER_ID_GAP = 1_000_000_000
# Export files written by ``export_rotating``: metadata-<cluster>-<UTC time>.json
_ROTATING = re.compile(r"^metadata-(?P<cluster>.+)-\d{8}T\d{9}Z\.json$")

# Key names after the prefix, as glob patterns. Order matters only for readability.
METADATA_KEYS: tuple[str, ...] = (
    "topics",
    "topic_ids",
    "topic_collisions",
    "configs:*",
    "config_resources",
    "brokers",
    "broker_epoch",
    "controller_epoch",
    "next_producer_id",
    "incarnation",
    "metadata_log",
    "acls",
    "acls_version",
    "client_quotas",
    "scram:*",
    "ops:reassignments",
    "ops:throttled_brokers",
    "ops:throttled_topics",
    "ops:rebalance",
)
RUNTIME_KEYS: tuple[str, ...] = (
    "broker:*",
    "controller",
    "commands:*",
    "command_reply:*",
    "partition_state",
    "replica_state",
    "broker_metrics",
    "traffic:*",
    "lag:*",
    "channels*",
    "ops:rebalance_lock",
    "coordination:*",
    "metadata_log_trimmed",
    "metadata_log_committed",
)
# Written by the import from the values below, not copied.
_COUNTER_GAPS: dict[str, int] = {
    "controller_epoch": EPOCH_GAP,
    "broker_epoch": EPOCH_GAP,
    "acls_version": EPOCH_GAP,
    "next_producer_id": PRODUCER_ID_GAP,
}
# Keys whose presence makes a target "not empty": all metadata, and live leases.
_BLOCKING = (*METADATA_KEYS, "broker:*", "controller")
_TYPES = ("string", "hash", "set", "list")
# How long an import waits for the replicas in sync to acknowledge it.
IMPORT_WAIT_MS = 10_000


class SnapshotFileError(ValueError):
    """The file is not a snapshot this Weir can import (the message names the problem)."""


class SnapshotImportError(RuntimeError):
    """The import was written but not confirmed by the replicas in sync."""


class TargetNotEmptyError(RuntimeError):
    """The target Redis already holds metadata (or live leases) for the cluster id."""


def classify(name: str) -> str | None:
    """``"metadata"``, ``"runtime"`` or None (unknown) for a key name after the prefix."""
    # Runtime first: "ops:rebalance_lock" must not match a broader metadata pattern.
    if any(fnmatch.fnmatchcase(name, p) for p in RUNTIME_KEYS):
        return "runtime"
    if any(fnmatch.fnmatchcase(name, p) for p in METADATA_KEYS):
        return "metadata"
    return None


def _glob_escape(text: str) -> str:
    """``text`` as a literal inside a Redis glob pattern."""
    return re.sub(r"([\\*?\[\]])", r"\\\1", text)


# -- Lua -------------------------------------------------------------------------------------
# ARGV: escaped prefix, then glob patterns (after the prefix). Returns a flat list of
# name, type, value (value: a string, or a flat array; a stream gives its last-generated id).
_EXPORT = """
local out = {}
local seen = {}
for i = 2, #ARGV do
  for _, key in ipairs(redis.call('KEYS', ARGV[1] .. ARGV[i])) do
    if not seen[key] then
      seen[key] = true
      local kind = redis.call('TYPE', key)['ok']
      local value
      if kind == 'string' then value = redis.call('GET', key)
      elseif kind == 'hash' then value = redis.call('HGETALL', key)
      elseif kind == 'set' then value = redis.call('SMEMBERS', key)
      elseif kind == 'list' then value = redis.call('LRANGE', key, 0, -1)
      elseif kind == 'stream' then
        local info = redis.call('XINFO', 'STREAM', key)
        value = '0-0'
        for j = 1, #info, 2 do
          if info[j] == 'last-generated-id' then value = info[j + 1] end
        end
      else value = '' end
      out[#out + 1] = key
      out[#out + 1] = kind
      out[#out + 1] = value
    end
  end
end
return out
"""

# ARGV: escaped prefix, JSON list of blocking patterns, JSON list of [name, type, value],
#       metadata log key, metadata log position ('' for none), prefix (unescaped).
_IMPORT = """
local found = {}
for _, pattern in ipairs(cjson.decode(ARGV[2])) do
  for _, key in ipairs(redis.call('KEYS', ARGV[1] .. pattern)) do
    if #found < 5 then found[#found + 1] = key end
  end
end
if #found > 0 then return {'not_empty', unpack(found)} end
local count = 0
for _, entry in ipairs(cjson.decode(ARGV[3])) do
  local key, kind, value = ARGV[6] .. entry[1], entry[2], entry[3]
  if kind == 'string' then redis.call('SET', key, value)
  elseif kind == 'hash' then
    for field, v in pairs(value) do redis.call('HSET', key, field, v) end
  elseif kind == 'set' then
    for _, member in ipairs(value) do redis.call('SADD', key, member) end
  elseif kind == 'list' then
    for _, item in ipairs(value) do redis.call('RPUSH', key, item) end
  end
  count = count + 1
end
if ARGV[5] ~= '' and ARGV[5] ~= '0-0' then
  -- An empty stream whose last-generated id is the exported position.
  redis.call('XADD', ARGV[4], ARGV[5], 'type', 'SnapshotRestored')
  redis.call('XDEL', ARGV[4], ARGV[5])
end
return {'ok', tostring(count)}
"""


# -- export ----------------------------------------------------------------------------------
def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def export_document(client: redis.Redis, *, cluster_id: str, now_ms: int) -> dict[str, Any]:
    """The snapshot document of ``cluster_id`` read from ``client`` (one atomic script)."""
    layout = KeyLayout(cluster_id)
    flat = client.eval(_EXPORT, 0, _glob_escape(layout.prefix), *METADATA_KEYS)
    keys: dict[str, dict[str, Any]] = {}
    position = "0-0"
    for i in range(0, len(flat), 3):
        name = _text(flat[i]).removeprefix(layout.prefix)
        kind, raw = _text(flat[i + 1]), flat[i + 2]
        if classify(name) != "metadata":
            continue  # e.g. ops:rebalance_lock matched ops:* would be runtime
        if name == "metadata_log":
            position = _text(raw)
            continue
        if kind == "string":
            value: Any = _text(raw)
        elif kind == "hash":
            value = {_text(raw[j]): _text(raw[j + 1]) for j in range(0, len(raw), 2)}
        elif kind in ("set", "list"):
            value = [_text(v) for v in raw]
            if kind == "set":
                value.sort()
        else:
            raise SnapshotFileError(f"key {layout.key(name)} has unexpected type {kind}")
        keys[name] = {"type": kind, "value": value}
    return {
        "format": FORMAT,
        "version": VERSION,
        "cluster_id": cluster_id,
        "exported_at_ms": now_ms,
        "source_incarnation": keys.get("incarnation", {}).get("value", ""),
        "metadata_log_position": position,
        "keys": keys,
    }


def write_snapshot_file(document: Mapping[str, Any], path: Path) -> None:
    """Write ``document`` to ``path`` atomically (temporary file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1, sort_keys=True)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    # The rename itself must reach the disk too.
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


@dataclass(frozen=True, slots=True)
class ExportResult:
    """One written export: where, and what it holds."""

    path: Path
    topics: int
    keys: int
    metadata_log_position: str
    pruned: tuple[Path, ...] = ()


def _summary(document: Mapping[str, Any], path: Path) -> ExportResult:
    keys = document["keys"]
    return ExportResult(
        path=path,
        topics=len(keys.get("topics", {}).get("value", {})),
        keys=len(keys),
        metadata_log_position=document["metadata_log_position"],
    )


def export_to_file(url: str, *, cluster_id: str, path: Path) -> ExportResult:
    """Export ``cluster_id``'s metadata from the Redis at ``url`` into ``path``."""
    client = sync_client(url, decode_responses=True)
    try:
        document = export_document(client, cluster_id=cluster_id, now_ms=time.time_ns() // 10**6)
    finally:
        close_client(client)
    write_snapshot_file(document, path)
    return _summary(document, Path(path))


def export_rotating(url: str, *, cluster_id: str, directory: Path, keep: int) -> ExportResult:
    """Export into ``directory`` as ``metadata-<cluster>-<UTC time>.json`` and delete all but
    the newest ``keep`` exports of this cluster there (other files are never touched)."""
    if keep < 1:
        raise ValueError(f"keep must be at least 1, not {keep}")
    directory = Path(directory)
    now_ns = time.time_ns()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now_ns // 10**9))
    path = directory / f"metadata-{cluster_id}-{stamp}{now_ns // 10**6 % 1000:03d}Z.json"
    result = export_to_file(url, cluster_id=cluster_id, path=path)
    ours = sorted(
        p
        for p in directory.iterdir()
        if (m := _ROTATING.match(p.name)) is not None and m["cluster"] == cluster_id
    )
    pruned = tuple(ours[:-keep])
    for old in pruned:
        old.unlink(missing_ok=True)
    return replace(result, pruned=pruned)


# -- reading and checking a file -------------------------------------------------------------
def _check_value(name: str, kind: Any, value: Any) -> str | None:
    """What is wrong with one key entry, or None."""
    if kind not in _TYPES:
        return f"key {name!r} has type {kind!r} (expected one of {', '.join(_TYPES)})"
    strings = (
        isinstance(value, str)
        if kind == "string"
        else (
            isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
            if kind == "hash"
            else isinstance(value, list) and all(isinstance(v, str) for v in value)
        )
    )
    if not strings:
        return f"key {name!r}: a {kind} value must hold strings only"
    return None


def validate_document(document: Any, *, source: str) -> dict[str, Any]:
    """``document`` if it is a snapshot this Weir reads; else SnapshotFileError."""

    def bad(problem: str) -> SnapshotFileError:
        return SnapshotFileError(f"{source} is not a usable Weir metadata snapshot: {problem}")

    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise bad(f'"format" is not "{FORMAT}"')
    version = document.get("version")
    if not isinstance(version, int):
        raise bad('"version" is missing or not a number')
    if version > VERSION:
        raise bad(f"it is version {version}, written by a newer Weir (this one reads {VERSION})")
    for field, kind in (
        ("cluster_id", str),
        ("metadata_log_position", str),
        ("exported_at_ms", int),
        ("keys", dict),
    ):
        if not isinstance(document.get(field), kind):
            raise bad(f'"{field}" is missing or not a {kind.__name__}')
    if not re.fullmatch(r"\d+-\d+", document["metadata_log_position"]):
        raise bad(f'"metadata_log_position" {document["metadata_log_position"]!r} is no stream id')
    for name, entry in document["keys"].items():
        if classify(name) != "metadata" or name == "metadata_log":
            raise bad(f"key {name!r} is not cluster metadata")
        if not isinstance(entry, dict):
            raise bad(f"key {name!r} is not an object with type and value")
        if (problem := _check_value(name, entry.get("type"), entry.get("value"))) is not None:
            raise bad(problem)
    for name in _COUNTER_GAPS:
        entry = document["keys"].get(name)
        if entry is not None and not str(entry["value"]).isdigit():
            raise bad(f"counter {name!r} is {entry['value']!r}, not a number")
    for name, text in document["keys"].get("topics", {}).get("value", {}).items():
        try:
            TopicImage.from_json(name, text)
        except (ValueError, KeyError, TypeError) as exc:
            raise bad(f"topic {name!r} does not parse ({type(exc).__name__}: {exc})") from None
    return document


def read_snapshot_file(path: Path) -> dict[str, Any]:
    """The checked document in ``path`` (SnapshotFileError names the file and the problem)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SnapshotFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SnapshotFileError(f"{path} is not a Weir metadata snapshot: not UTF-8 text") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SnapshotFileError(
            f"{path} is not a Weir metadata snapshot: not JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno})"
        ) from None
    return validate_document(document, source=str(path))


# -- import ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ImportResult:
    """What the import wrote, and the values it moved forward."""

    topics: int
    keys: int
    controller_epoch: int
    next_producer_id: int
    metadata_log_position: str
    incarnation: str


def _bumped_topics(topics: Mapping[str, str]) -> dict[str, str]:
    """Every partition's leader and partition epoch moved EPOCH_GAP forward."""
    out = {}
    for name, text in topics.items():
        topic = TopicImage.from_json(name, text)
        partitions = {
            i: replace(
                p,
                leader_epoch=p.leader_epoch + EPOCH_GAP,
                partition_epoch=p.partition_epoch + EPOCH_GAP,
            )
            for i, p in topic.partitions.items()
        }
        out[name] = replace(topic, partitions=partitions).to_json()
    return out


def import_document(
    client: redis.Redis, document: Mapping[str, Any], *, cluster_id: str
) -> ImportResult:
    """Write ``document`` (checked) into an empty target for ``cluster_id``, moving epochs,
    version counters and producer ids forward (module docstring)."""
    if document["cluster_id"] != cluster_id:
        raise SnapshotFileError(
            f"the snapshot is of cluster {document['cluster_id']!r}, but the target cluster id "
            f"(WEIR_CLUSTER_ID) is {cluster_id!r}"
        )
    layout = KeyLayout(cluster_id)
    source: dict[str, dict[str, Any]] = dict(document["keys"])
    entries: dict[str, tuple[str, Any]] = {
        name: (entry["type"], entry["value"]) for name, entry in source.items()
    }
    for name, gap in _COUNTER_GAPS.items():
        exported = int(source.get(name, {}).get("value", "0"))
        entries[name] = ("string", str(exported + gap))
    if "topics" in entries:
        entries["topics"] = ("hash", _bumped_topics(entries["topics"][1]))
    incarnation = uuid.uuid4().hex
    entries["incarnation"] = ("string", incarnation)
    payload = [[name, kind, value] for name, (kind, value) in sorted(entries.items())]
    position = document["metadata_log_position"]
    # On a replicated deployment the import counts once every replica in sync holds it
    # (WAIT on the same connection), as metadata writes do (weir.metadata.quorum).
    try:
        [reply] = write_sync(
            client,
            lambda pipe: pipe.eval(
                _IMPORT,
                0,
                _glob_escape(layout.prefix),
                json.dumps(list(_BLOCKING)),
                json.dumps(payload),
                layout.metadata_log,
                position,
                layout.prefix,
            ),
            timeout_ms=IMPORT_WAIT_MS,
        )
    except WriteNotReplicatedError as exc:
        raise SnapshotImportError(
            f"{exc}: check the replicas, then export again from this Redis to verify the "
            "import before starting brokers"
        ) from exc
    status = [_text(v) for v in reply]
    if status[0] == "not_empty":
        raise TargetNotEmptyError(
            f"the target Redis already holds metadata of cluster {cluster_id!r} (e.g. "
            f"{', '.join(status[1:])}); import only into an empty one, with every broker of "
            "the cluster stopped"
        )
    return ImportResult(
        topics=len(entries.get("topics", ("hash", {}))[1]),
        keys=int(status[1]),
        controller_epoch=int(entries["controller_epoch"][1]),
        next_producer_id=int(entries["next_producer_id"][1]),
        metadata_log_position=position,
        incarnation=incarnation,
    )


def import_from_file(url: str, *, cluster_id: str, path: Path) -> ImportResult:
    """Read and check ``path``, then import it into the Redis at ``url``."""
    document = read_snapshot_file(path)
    client = sync_client(url, decode_responses=True)
    try:
        return import_document(client, document, cluster_id=cluster_id)
    finally:
        close_client(client)
