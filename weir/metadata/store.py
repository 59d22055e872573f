"""``MetadataStore``: fenced, atomic writes of the cluster metadata into Redis.

Theory of operation
-------------------
Redis plays the part of ZooKeeper / the KRaft quorum. Every metadata write is *one* Lua
script (``register_script``), so it is atomic and ordered with every other write. Each script

1. checks the fence: ``controller_epoch`` must equal the epoch the caller passes. A controller
   that lost its lease (and whose successor incremented the epoch) can no longer write;
2. validates (the topic exists, or does not; names do not collide);
3. appends the change records to the Redis Stream ``metadata_log`` (the last one of the batch
   carries ``end=1``);
4. updates the materialized state (``topics``, ``configs:*`` ...).

Steps 1-2 finish before any write, since Redis does not roll a script back. Changes to an
existing topic (new partitions, partition changes) are computed here from the stored JSON
and committed with a compare-and-set on it; a conflicting writer makes us re-read and retry.

The controller lease is the key ``controller`` (``<broker_id>:<epoch>`` with a PX TTL);
acquiring it increments ``controller_epoch`` in the same script. ``snapshot()`` reads the
whole materialized state plus the stream id it corresponds to, atomically (one script), so
a reader can tail the log from exactly there. See ``keys.py`` for the key layout.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import redis.asyncio as aioredis
from kio.schema.errors import ErrorCode
from redis.exceptions import RedisError

from weir.metadata.errors import (
    FencedError,
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    MetadataError,
    MetadataUnavailableError,
    TopicExistsError,
    UnknownTopicError,
)
from weir.metadata.image import ClusterImage, ControllerLease, PartitionImage, TopicImage
from weir.metadata.keys import KeyLayout
from weir.metadata.quorum import WriteQuorum, replied_ok
from weir.metadata.records import (
    ClientQuotaRecord,
    ConfigRecord,
    PartitionChangeRecord,
    Record,
    ResourceType,
    TopicRecord,
)
from weir.metadata.redis_url import async_client
from weir.quotas import QuotaEntity
from weir.topic_names import InvalidTopicName, validate_topic_name

__all__ = ["MetadataStore", "PartitionChange", "StalePartitionEpochError"]

T = TypeVar("T")
CAS_ATTEMPTS = 10

# -- Lua -------------------------------------------------------------------------------------
# Shared prologue: the controller fence (KEYS[1] = controller_epoch, ARGV[1] = caller's epoch)
# and a helper that appends a batch of records, marking the last one.
_PROLOGUE = """
local current_epoch = redis.call('GET', KEYS[1])
if current_epoch ~= ARGV[1] then return {'fenced', current_epoch or ''} end
local function append(log_key, entries)
  local last = ''
  for i, e in ipairs(entries) do
    if i == #entries then
      last = redis.call('XADD', log_key, '*', 'type', e[1], 'data', e[2], 'end', '1')
    else
      last = redis.call('XADD', log_key, '*', 'type', e[1], 'data', e[2])
    end
  end
  return last
end
local function read_entries(start)
  local entries = {}
  local n = tonumber(ARGV[start])
  local i = start + 1
  for _ = 1, n do
    entries[#entries + 1] = {ARGV[i], ARGV[i + 1]}
    i = i + 2
  end
  return entries, i
end
"""

# KEYS: controller_epoch, topics, topic_ids, topic_collisions, metadata_log,
#       configs:topic:<name>, config_resources
# ARGV: epoch, name, normalized name, topic id, topic json, resource member,
#       n configs, k, v, ..., n records, type, data, ...
_CREATE_TOPIC = (
    _PROLOGUE
    + """
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then return {'exists', ARGV[2]} end
local other = redis.call('HGET', KEYS[4], ARGV[3])
if other then return {'collides', other} end
if redis.call('HEXISTS', KEYS[3], ARGV[4]) == 1 then return {'id_exists', ARGV[4]} end
local configs, next_arg = read_entries(7)
local records = read_entries(next_arg)
redis.call('HSET', KEYS[2], ARGV[2], ARGV[5])
redis.call('HSET', KEYS[3], ARGV[4], ARGV[2])
redis.call('HSET', KEYS[4], ARGV[3], ARGV[2])
redis.call('DEL', KEYS[6])
for _, kv in ipairs(configs) do redis.call('HSET', KEYS[6], kv[1], kv[2]) end
if #configs > 0 then
  redis.call('SADD', KEYS[7], ARGV[6])
else
  redis.call('SREM', KEYS[7], ARGV[6])
end
return {'ok', append(KEYS[5], records)}
"""
)

# KEYS: controller_epoch, topics, topic_ids, topic_collisions, metadata_log,
#       configs:topic:<name>, config_resources
# ARGV: epoch, name, normalized name, resource member, expected topic id or ''
_DELETE_TOPIC = (
    _PROLOGUE
    + """
local json = redis.call('HGET', KEYS[2], ARGV[2])
if not json then return {'unknown', ARGV[2]} end
local topic_id = cjson.decode(json)['topic_id']
if ARGV[5] ~= '' and ARGV[5] ~= topic_id then return {'unknown', ARGV[2]} end
redis.call('HDEL', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[3], topic_id)
if redis.call('HGET', KEYS[4], ARGV[3]) == ARGV[2] then redis.call('HDEL', KEYS[4], ARGV[3]) end
redis.call('DEL', KEYS[6])
redis.call('SREM', KEYS[7], ARGV[4])
local data = cjson.encode({name = ARGV[2], topic_id = topic_id})
return {'ok', append(KEYS[5], {{'RemoveTopic', data}}), topic_id}
"""
)

# KEYS: controller_epoch, topics, metadata_log
# ARGV: epoch, name, expected json, new json, n records, type, data, ...
_UPDATE_TOPIC = (
    _PROLOGUE
    + """
local json = redis.call('HGET', KEYS[2], ARGV[2])
if not json then return {'unknown', ARGV[2]} end
if json ~= ARGV[3] then return {'conflict', ''} end
local records = read_entries(5)
redis.call('HSET', KEYS[2], ARGV[2], ARGV[4])
return {'ok', append(KEYS[3], records)}
"""
)

# KEYS: controller_epoch, topics, configs:<type>:<name>, config_resources, metadata_log
# ARGV: epoch, resource type, resource name, resource member, replace ('1' / '0'),
#       n sets, k, v, ..., n deletes, k, ...
_ALTER_CONFIGS = (
    _PROLOGUE
    + """
if ARGV[2] == 'topic' and redis.call('HEXISTS', KEYS[2], ARGV[3]) == 0 then
  return {'unknown', ARGV[3]}
end
local sets, i = read_entries(6)
local deletes = {}
for _ = 1, tonumber(ARGV[i]) do
  i = i + 1
  deletes[#deletes + 1] = ARGV[i]
end
if ARGV[5] == '1' then
  local keep = {}
  for _, kv in ipairs(sets) do keep[kv[1]] = true end
  for _, k in ipairs(redis.call('HKEYS', KEYS[3])) do
    if not keep[k] then deletes[#deletes + 1] = k end
  end
end
local records = {}
local function record(k, v)
  local data = cjson.encode({resource_type = ARGV[2], resource_name = ARGV[3], name = k,
                             value = v})
  records[#records + 1] = {'Config', data}
end
for _, k in ipairs(deletes) do
  if redis.call('HDEL', KEYS[3], k) == 1 then record(k, cjson.null) end
end
for _, kv in ipairs(sets) do
  if redis.call('HGET', KEYS[3], kv[1]) ~= kv[2] then
    redis.call('HSET', KEYS[3], kv[1], kv[2])
    record(kv[1], kv[2])
  end
end
if redis.call('HLEN', KEYS[3]) > 0 then
  redis.call('SADD', KEYS[4], ARGV[4])
else
  redis.call('SREM', KEYS[4], ARGV[4])
end
return {'ok', append(KEYS[5], records)}
"""
)

# KEYS: controller_epoch, client_quotas, metadata_log
# ARGV: epoch, n ops, then per op: entity key, quota key, value ('' removes), record data
# Values are kept as the strings the caller wrote; only real changes are logged.
_ALTER_CLIENT_QUOTAS = (
    _PROLOGUE
    + """
local records = {}
local i = 3
for _ = 1, tonumber(ARGV[2]) do
  local entity, key, value, data = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  i = i + 4
  local stored = redis.call('HGET', KEYS[2], entity)
  local values = {}
  if stored then values = cjson.decode(stored) end
  local new = value
  if value == '' then new = nil end
  if values[key] ~= new then
    values[key] = new
    if next(values) == nil then
      redis.call('HDEL', KEYS[2], entity)
    else
      redis.call('HSET', KEYS[2], entity, cjson.encode(values))
    end
    records[#records + 1] = {'ClientQuota', data}
  end
end
if #records == 0 then return {'ok', ''} end
return {'ok', append(KEYS[3], records)}
"""
)

# KEYS: metadata_log, topics, brokers, config_resources, controller, incarnation, client_quotas
# ARGV: key prefix, a fresh incarnation id (kept only if none exists yet)
_SNAPSHOT = """
redis.call('SET', KEYS[6], ARGV[2], 'NX')
local incarnation = redis.call('GET', KEYS[6])
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local stream_id = '0-0'
if #newest > 0 then stream_id = newest[1][1] end
local topics = redis.call('HGETALL', KEYS[2])
local brokers = redis.call('HGETALL', KEYS[3])
local configs = {}
for _, resource in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  configs[#configs + 1] = resource
  configs[#configs + 1] = redis.call('HGETALL', ARGV[1] .. 'configs:' .. resource)
end
local live = {}
for j = 1, #brokers, 2 do
  if redis.call('EXISTS', ARGV[1] .. 'broker:' .. brokers[j]) == 1 then
    live[#live + 1] = brokers[j]
  end
end
local controller = redis.call('GET', KEYS[5]) or ''
local quotas = redis.call('HGETALL', KEYS[7])
return {stream_id, topics, brokers, configs, live, controller, incarnation, quotas}
"""

# KEYS: controller, controller_epoch.  ARGV: broker id, lease ms
_ACQUIRE_CONTROLLER = """
local holder = redis.call('GET', KEYS[1])
if holder then return {'held', holder} end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. epoch, 'PX', ARGV[2])
return {'ok', tostring(epoch)}
"""

# KEYS: controller, controller_epoch.  ARGV: '<broker id>:<epoch>', lease ms, epoch
_RENEW_CONTROLLER = """
if redis.call('GET', KEYS[2]) ~= ARGV[3] then return {'fenced', ''} end
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return {'fenced', holder} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {'ok', ''}
"""

# KEYS: controller.  ARGV: '<broker id>:<epoch>'
_RESIGN_CONTROLLER = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _pairs(flat: Sequence[Any]) -> dict[str, str]:
    return {_text(flat[i]): _text(flat[i + 1]) for i in range(0, len(flat), 2)}


def _normalized(name: str) -> str:
    """Kafka forbids names that differ only by '.' versus '_' (their metric names collide)."""
    return name.replace(".", "_")


def _flatten_records(records: Sequence[Record]) -> list[str]:
    out = [str(len(records))]
    for record in records:
        out += [record.TYPE, record.to_json()]
    return out


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """A requested change to one partition; ``None`` fields stay as they are."""

    partition: int
    leader: int | None = None
    isr: Sequence[int] | None = None
    replicas: Sequence[int] | None = None
    adding_replicas: Sequence[int] | None = None
    removing_replicas: Sequence[int] | None = None
    expected_partition_epoch: int | None = None


class StalePartitionEpochError(MetadataError):
    """The caller's view of the partition is outdated (Kafka's INVALID_UPDATE_VERSION)."""

    error_code = ErrorCode.invalid_update_version


# Trim the metadata log below a cutoff id, never its newest entry, and remember the newest
# removed id so a cache that had not read that far knows it must re-snapshot.
_TRIM_LOG = """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last == 0 then return 0 end
local victims = redis.call('XREVRANGE', KEYS[1], '(' .. ARGV[1], '-', 'COUNT', 1)
if #victims == 0 then return 0 end
local newest_removed = victims[1][1]
local min_id = ARGV[1]
if newest_removed == last[1][1] then
  local previous = redis.call('XREVRANGE', KEYS[1], '(' .. last[1][1], '-', 'COUNT', 1)
  if #previous == 0 then return 0 end
  newest_removed = previous[1][1]
  min_id = last[1][1]
end
local removed = redis.call('XTRIM', KEYS[1], 'MINID', min_id)
redis.call('SET', KEYS[2], newest_removed)
return removed
"""


class MetadataStore:
    """Fenced metadata writes and consistent snapshots for one cluster id.

    ``redis`` may decode responses or not. ``from_url`` builds a store owning its client
    (close it with ``aclose``).
    """

    def __init__(self, redis: aioredis.Redis, *, cluster_id: str) -> None:
        self.redis = redis
        self.keys = KeyLayout(cluster_id)
        self._owns_client = False
        self._create_topic = redis.register_script(_CREATE_TOPIC)
        self._delete_topic = redis.register_script(_DELETE_TOPIC)
        self._update_topic = redis.register_script(_UPDATE_TOPIC)
        self._alter_configs = redis.register_script(_ALTER_CONFIGS)
        self._alter_client_quotas = redis.register_script(_ALTER_CLIENT_QUOTAS)
        self._snapshot = redis.register_script(_SNAPSHOT)
        self._acquire = redis.register_script(_ACQUIRE_CONTROLLER)
        self._renew = redis.register_script(_RENEW_CONTROLLER)
        self._resign = redis.register_script(_RESIGN_CONTROLLER)
        self._trim_log = redis.register_script(_TRIM_LOG)
        self.quorum = WriteQuorum(redis, self.keys)

    @classmethod
    def from_url(cls, url: str, *, cluster_id: str) -> MetadataStore:
        store = cls(async_client(url, decode_responses=True), cluster_id=cluster_id)
        store._owns_client = True
        return store

    async def aclose(self) -> None:
        if self._owns_client:
            await self.redis.aclose()

    async def _run(
        self, script: Any, keys: list[str], args: list[Any], *, confirm: bool = True
    ) -> list[str]:
        """Run a write script; with ``confirm``, a write (status ``ok``) counts only once a
        Sentinel deployment's replicas hold it (``WriteQuorum.run_script``, raises if not)."""
        try:
            if confirm:
                result = await self.quorum.run_script(script, keys, args, wrote=replied_ok)
            else:
                result = await script(keys=keys, args=args)
        except (RedisError, OSError) as exc:
            raise MetadataUnavailableError(f"metadata store unavailable: {exc}") from exc
        return [_text(v) for v in result] if isinstance(result, list) else [_text(result)]

    @staticmethod
    def _check(result: list[str], *, name: str = "") -> list[str]:
        """Turn a script's status reply into the matching error."""
        status = result[0]
        if status == "ok":
            return result
        detail = result[1] if len(result) > 1 else ""
        if status == "fenced":
            raise FencedError(
                "this broker is no longer the controller (controller epoch is now "
                f"{detail or 'unset'}); the write was rejected"
            )
        if status == "exists":
            raise TopicExistsError(f"Topic '{name}' already exists.")
        if status == "collides":
            raise InvalidTopicError(
                f"Topic '{name}' collides with existing topic: {detail} (topic names may not "
                "differ only by '.' and '_')"
            )
        if status == "unknown":
            raise UnknownTopicError(f"The topic '{name}' does not exist.")
        raise MetadataError(f"unexpected metadata store reply {result!r}")

    # -- controller lease ------------------------------------------------------------------
    async def acquire_controller(self, broker_id: int, lease_ms: int) -> int | None:
        """Take the controller lease if nobody holds it: the new controller epoch, else None."""
        keys = [self.keys.controller, self.keys.controller_epoch]
        result = await self._run(self._acquire, keys, [broker_id, lease_ms])
        return int(result[1]) if result[0] == "ok" else None

    async def renew_controller(self, broker_id: int, epoch: int, lease_ms: int) -> bool:
        """Extend the lease; False when ``epoch`` is no longer current (we were replaced)."""
        keys = [self.keys.controller, self.keys.controller_epoch]
        # Not confirmed: a renewal lost in a failover only shortens the lease, and every
        # controller write is fenced by the epoch anyway.
        result = await self._run(
            self._renew, keys, [f"{broker_id}:{epoch}", lease_ms, epoch], confirm=False
        )
        return result[0] == "ok"

    async def resign_controller(self, broker_id: int, epoch: int) -> None:
        """Give the lease up now (clean shutdown) so another broker takes over at once."""
        await self._run(
            self._resign, [self.keys.controller], [f"{broker_id}:{epoch}"], confirm=False
        )

    async def controller(self) -> ControllerLease | None:
        try:
            return ControllerLease.parse(await self.redis.get(self.keys.controller))
        except (RedisError, OSError) as exc:
            raise MetadataUnavailableError(f"metadata store unavailable: {exc}") from exc

    # -- topics ----------------------------------------------------------------------------
    def _topic_keys(self, name: str) -> list[str]:
        """The keys a topic's creation or deletion touches, in the order both scripts take."""
        keys = self.keys
        return [
            keys.controller_epoch,
            keys.topics,
            keys.topic_ids,
            keys.topic_collisions,
            keys.metadata_log,
            keys.configs(ResourceType.TOPIC, name),
            keys.config_resources,
        ]

    async def create_topic(
        self,
        *,
        controller_epoch: int,
        name: str,
        assignments: Sequence[Sequence[int]],
        configs: Mapping[str, str] | None = None,
        topic_id: uuid.UUID | None = None,
        live_brokers: Collection[int] | None = None,
    ) -> uuid.UUID:
        """Create ``name`` with one partition per assignment; its id.

        The ISR is the replicas (only the live ones if ``live_brokers`` is given) and the
        leader the first of them. Raises TopicExistsError, InvalidTopicError, FencedError.
        ``configs`` must already be validated (``weir.config.validate_topic_configs``).
        """
        try:
            validate_topic_name(name)
        except InvalidTopicName as exc:
            raise InvalidTopicError(str(exc)) from None
        if not assignments:
            raise InvalidReplicaAssignmentError("A topic needs at least one partition.")
        topic_id = topic_id or uuid.uuid4()
        partitions = {
            index: _new_partition(index, replicas, live_brokers)
            for index, replicas in enumerate(assignments)
        }
        topic = TopicImage(name, topic_id, partitions)
        configs = dict(configs or {})
        records: list[Record] = [TopicRecord(name=name, topic_id=topic_id)]
        records += [p.to_record(topic_id) for p in partitions.values()]
        records += [
            ConfigRecord(ResourceType.TOPIC, name, key, value) for key, value in configs.items()
        ]
        args: list[Any] = [
            controller_epoch,
            name,
            _normalized(name),
            str(topic_id),
            topic.to_json(),
            f"topic:{name}",
            len(configs),
        ]
        for key, value in configs.items():
            args += [key, value]
        args += _flatten_records(records)
        result = await self._run(self._create_topic, self._topic_keys(name), args)
        if result[0] == "id_exists":
            raise MetadataError(f"topic id {topic_id} is already in use")
        self._check(result, name=name)
        return topic_id

    async def delete_topic(
        self, *, controller_epoch: int, name: str, topic_id: uuid.UUID | None = None
    ) -> uuid.UUID:
        """Delete ``name`` (and its config overrides); the id it had.

        With ``topic_id``, only if the topic still has that id (DeleteTopics by id).
        """
        result = await self._run(
            self._delete_topic,
            self._topic_keys(name),
            [controller_epoch, name, _normalized(name), f"topic:{name}", str(topic_id or "")],
        )
        self._check(result, name=name)
        return uuid.UUID(result[2])

    async def get_topic(self, name: str) -> TopicImage | None:
        """The stored state of one topic (straight from Redis, not a cache)."""
        try:
            text = await self.redis.hget(self.keys.topics, name)
        except (RedisError, OSError) as exc:
            raise MetadataUnavailableError(f"metadata store unavailable: {exc}") from exc
        return None if text is None else TopicImage.from_json(name, text)

    async def _update_topic_cas(
        self, *, controller_epoch: int, name: str, change: Any
    ) -> TopicImage:
        """Read ``name``, let ``change(topic) -> (new topic, records)``, compare-and-set."""
        for _ in range(CAS_ATTEMPTS):
            try:
                current = await self.redis.hget(self.keys.topics, name)
            except (RedisError, OSError) as exc:
                raise MetadataUnavailableError(f"metadata store unavailable: {exc}") from exc
            if current is None:
                raise UnknownTopicError(f"The topic '{name}' does not exist.")
            current_text = _text(current)
            topic = TopicImage.from_json(name, current_text)
            new_topic, records = change(topic)
            if not records:
                return topic
            result = await self._run(
                self._update_topic,
                [self.keys.controller_epoch, self.keys.topics, self.keys.metadata_log],
                [
                    controller_epoch,
                    name,
                    current_text,
                    new_topic.to_json(),
                    *_flatten_records(records),
                ],
            )
            if result[0] != "conflict":
                self._check(result, name=name)
                return new_topic
        raise MetadataUnavailableError(f"topic {name} kept changing; gave up after retries")

    async def create_partitions(
        self,
        *,
        controller_epoch: int,
        name: str,
        assignments: Sequence[Sequence[int]],
        live_brokers: Collection[int] | None = None,
    ) -> int:
        """Append one partition per assignment to ``name``; the new partition count."""

        def change(topic: TopicImage) -> tuple[TopicImage, list[Record]]:
            start = len(topic.partitions)
            added = {
                start + i: _new_partition(start + i, replicas, live_brokers)
                for i, replicas in enumerate(assignments)
            }
            new_topic = TopicImage(topic.name, topic.topic_id, {**topic.partitions, **added})
            return new_topic, [p.to_record(topic.topic_id) for p in added.values()]

        topic = await self._update_topic_cas(
            controller_epoch=controller_epoch, name=name, change=change
        )
        return len(topic.partitions)

    async def alter_partitions(
        self, *, controller_epoch: int, name: str, changes: Sequence[PartitionChange]
    ) -> TopicImage:
        """Change leaders/ISR/replicas of existing partitions; the topic afterwards.

        The partition epoch increments on every change and the leader epoch when the leader
        changes. ``expected_partition_epoch`` fences stale callers (StalePartitionEpochError).
        """

        def change(topic: TopicImage) -> tuple[TopicImage, list[Record]]:
            partitions = dict(topic.partitions)
            records: list[Record] = []
            for request in changes:
                current = partitions.get(request.partition)
                if current is None:
                    raise UnknownTopicError(
                        f"The partition {name}-{request.partition} does not exist."
                    )
                if (
                    request.expected_partition_epoch is not None
                    and request.expected_partition_epoch != current.partition_epoch
                ):
                    raise StalePartitionEpochError(
                        f"partition {name}-{request.partition} is at partition epoch "
                        f"{current.partition_epoch}, not {request.expected_partition_epoch}"
                    )
                leader_changed = request.leader is not None and request.leader != current.leader
                record = PartitionChangeRecord(
                    topic_id=topic.topic_id,
                    partition=request.partition,
                    leader_epoch=current.leader_epoch + (1 if leader_changed else 0),
                    partition_epoch=current.partition_epoch + 1,
                    leader=request.leader,
                    isr=_tuple(request.isr),
                    replicas=_tuple(request.replicas),
                    adding_replicas=_tuple(request.adding_replicas),
                    removing_replicas=_tuple(request.removing_replicas),
                )
                partitions[request.partition] = current.changed_by(record)
                records.append(record)
            return TopicImage(topic.name, topic.topic_id, partitions), records

        return await self._update_topic_cas(
            controller_epoch=controller_epoch, name=name, change=change
        )

    # -- configs ---------------------------------------------------------------------------
    async def alter_configs(
        self,
        *,
        controller_epoch: int,
        resource_type: str,
        resource_name: str,
        set: Mapping[str, str],  # Kafka's op name (AlterConfigOp SET); shadows the builtin
        delete: Collection[str] = (),
    ) -> None:
        """Incremental change of a resource's overrides (IncrementalAlterConfigs).

        ``resource_name`` is a topic name, a broker id, or "" for the cluster-wide broker
        default. Values must already be validated. Only real changes are logged.
        """
        await self._write_configs(
            controller_epoch, resource_type, resource_name, set, delete, replace=False
        )

    async def replace_configs(
        self,
        *,
        controller_epoch: int,
        resource_type: str,
        resource_name: str,
        configs: Mapping[str, str],
    ) -> None:
        """Replace all overrides of a resource with ``configs`` (legacy AlterConfigs)."""
        await self._write_configs(
            controller_epoch, resource_type, resource_name, configs, (), replace=True
        )

    async def _write_configs(
        self,
        controller_epoch: int,
        resource_type: str,
        resource_name: str,
        updates: Mapping[str, str],
        deletes: Collection[str],
        *,
        replace: bool,
    ) -> None:
        kind = ResourceType(resource_type)
        args: list[Any] = [
            controller_epoch,
            kind.value,
            resource_name,
            f"{kind.value}:{resource_name}",
            "1" if replace else "0",
            len(updates),
        ]
        for key, value in updates.items():
            args += [key, value]
        args += [len(deletes), *deletes]
        keys = self.keys
        result = await self._run(
            self._alter_configs,
            [
                keys.controller_epoch,
                keys.topics,
                keys.configs(kind, resource_name),
                keys.config_resources,
                keys.metadata_log,
            ],
            args,
        )
        self._check(result, name=resource_name)

    # -- client quotas ---------------------------------------------------------------------
    async def alter_client_quotas(
        self,
        *,
        controller_epoch: int,
        changes: Sequence[tuple[QuotaEntity, str, float | None]],
    ) -> None:
        """Set (a value) or remove (None) client quotas: ``(entity, quota key, value)``.

        Values must already be validated (``weir.quotas.validate_alteration``). One script, so
        a request's changes land together; only real changes are logged.
        """
        args: list[Any] = [controller_epoch, len(changes)]
        for entity, key, value in changes:
            text = None if value is None else repr(float(value))
            record = ClientQuotaRecord(entity=entity.components, key=key, value=text)
            args += [entity.to_key(), key, text or "", record.to_json()]
        keys = self.keys
        result = await self._run(
            self._alter_client_quotas,
            [keys.controller_epoch, keys.client_quotas, keys.metadata_log],
            args,
        )
        self._check(result)

    # -- producer ids ----------------------------------------------------------------------
    async def allocate_producer_ids(self, count: int = 1) -> range:
        """A block of ``count`` cluster-unique producer ids (KRaft's AllocateProducerIds)."""
        # Confirmed: never hand out ids a failover could give to someone else again.
        replies = await self.quorum.write(
            lambda pipe: pipe.incrby(self.keys.next_producer_id, count)
        )
        end = int(replies[0])
        return range(end - count, end)

    async def allocate_producer_id(self) -> int:
        return (await self.allocate_producer_ids(1)).start

    # -- reads -----------------------------------------------------------------------------
    async def trim_log(self, *, older_than_ms: int) -> int:
        """Remove metadata log entries written before ``older_than_ms`` (epoch ms).

        Kafka deletes metadata log segments older than ``metadata.max.retention.ms`` once a
        snapshot covers them; here the materialized state *is* that snapshot, always current,
        so old entries are only history. The newest entry always stays. Returns how many
        entries were removed.
        """
        if older_than_ms <= 0:
            return 0  # nothing is older than the epoch (and "(0-0" is no valid range end)
        try:
            removed = await self._trim_log(
                keys=[self.keys.metadata_log, self.keys.metadata_log_trimmed],
                args=[f"{older_than_ms}-0"],
            )
        except (RedisError, OSError) as exc:
            raise MetadataUnavailableError(f"metadata store unavailable: {exc}") from exc
        return int(removed)

    async def snapshot(self) -> ClusterImage:
        """The whole materialized state as one consistent image, with its stream id."""
        keys = self.keys
        try:
            result = await self._snapshot(
                keys=[
                    keys.metadata_log,
                    keys.topics,
                    keys.brokers,
                    keys.config_resources,
                    keys.controller,
                    keys.incarnation,
                    keys.client_quotas,
                ],
                args=[keys.prefix, uuid.uuid4().hex],
            )
        except (RedisError, OSError) as exc:
            raise MetadataUnavailableError(f"metadata store unavailable: {exc}") from exc
        stream_id, topics, brokers, configs, live, controller, incarnation, quotas = result
        # Nobody acts on state a failover could still take back.
        await self.quorum.ensure_committed(_text(stream_id))
        config_map = {_text(configs[i]): _pairs(configs[i + 1]) for i in range(0, len(configs), 2)}
        return ClusterImage.from_state(
            stream_id=_text(stream_id),
            topics=_pairs(topics),
            registrations=_pairs(brokers),
            configs=config_map,
            live_broker_ids=[int(_text(b)) for b in live],
            controller=ControllerLease.parse(controller),
            incarnation=_text(incarnation),
            client_quotas=_pairs(quotas),
        )


def _tuple(values: Sequence[int] | None) -> tuple[int, ...] | None:
    return None if values is None else tuple(values)


def _new_partition(
    index: int, replicas: Sequence[int], live_brokers: Collection[int] | None
) -> PartitionImage:
    replicas = tuple(int(r) for r in replicas)
    if not replicas:
        raise InvalidReplicaAssignmentError(
            f"The manual partition assignment includes an empty replica list (partition {index})."
        )
    if len(set(replicas)) != len(replicas):
        raise InvalidReplicaAssignmentError(
            f"The manual partition assignment of partition {index} includes a broker more "
            f"than once: {list(replicas)}."
        )
    if any(r < 0 for r in replicas):
        raise InvalidReplicaAssignmentError(f"Invalid broker id in {list(replicas)}.")
    isr = replicas if live_brokers is None else tuple(r for r in replicas if r in live_brokers)
    if not isr:
        raise InvalidReplicaAssignmentError(
            f"All brokers specified in the manual partition assignment for partition {index} "
            "are fenced or in controlled shutdown."
        )
    return PartitionImage(partition=index, replicas=replicas, isr=isr, leader=isr[0])
