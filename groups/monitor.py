"""The lag monitor: once a second, every group's lag per partition, its status, and the pushes.

Theory of operation
-------------------
One tick (:meth:`Monitor.tick`) is three steps:

1. **Read** (:class:`LagCollector`). Every live broker answers ListGroups with the groups it
   coordinates, so the broker that lists a group is its coordinator: one DescribeGroups and
   one OffsetFetch v8 (which takes many groups) per broker then give every group's state,
   members, assignments and committed offsets — three Kafka requests per broker a tick however
   many groups there are, sent to the brokers concurrently. High watermarks come from the
   partition states leaders publish to Redis every second. Lag = max(0, HW - committed).
2. **Age.** Lag in seconds is how old the first unconsumed record is: now - the timestamp of
   the record at the committed offset (0 when lag is 0). One Fetch per leader broker reads one
   batch per partition (``partition_max_bytes`` 1: Weir, like Kafka, always returns at least
   one whole batch) and the record's timestamp is cached by (topic, partition, offset), so a
   record is fetched once however long the group sits on it.
3. **Judge and publish.** Each partition has a Burrow window (:mod:`groups.burrow`). OffsetFetch
   shows the committed offset, not each commit, so a *commit* enters the window when the
   offset changes, and — for a partition a live member owns — every ``commit_interval_ms``
   (the clients' auto-commit interval) while it does not: a live consumer keeps committing the
   same offset (that is what makes STALL), while a group whose members left stops adding
   commits (that is what makes STOP). The snapshot of each group goes to Redis (for new
   websocket subscribers and the API), to the Channels group of ``/ws/groups/<group>/``, to
   the history tables (sampled every ``WEIR_LAG_HISTORY_INTERVAL_S``, default 5 s: the live
   view is per second, the stored one need not be), and, when the group's status changed, to
   the webhooks.

Scale: 100 groups x 50 partitions take about 0.2 s a tick on the 2-core development machine
(reading ~0.15 s; a history write adds ~0.5 s on SQLite every fifth second).

Errors on one broker (down, loading) skip that broker's groups for the tick; nothing here
raises out of a tick except when the whole cluster is unreachable.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.list_groups.v4.request import ListGroupsRequest
from kio.schema.offset_fetch.v8.request import OffsetFetchRequest, OffsetFetchRequestGroup

from controlplane.cluster import ClusterGateway
from controlplane.errors import KafkaUnavailable
from controlplane.traffic import TrafficMeter, broker_facts
from groups.burrow import (
    DEFAULT_WINDOW,
    Commit,
    GroupStatus,
    PartitionStatus,
    Window,
    evaluate_group,
    evaluate_partition,
)
from topics.health import health_counts
from weir.client import BrokerClient, BrokerClientError
from weir.coordinator.consumer_protocol import decode_assignment
from weir.metadata.image import ClusterImage
from weir.metadata.partition_state import ReplicaStatus
from weir.protocol.inflate import iter_offsets_and_timestamps
from weir.protocol.records import CorruptBatchError, iter_batches

__all__ = ["GroupLag", "GroupReading", "LagCollector", "Monitor", "PartitionLag", "cluster_view"]

log = logging.getLogger("weir.monitor")

DEFAULT_COMMIT_INTERVAL_MS = 5_000
REQUEST_TIMEOUT_S = 5.0
FETCH_MAX_BYTES = 32 * 1024 * 1024
SNAPSHOT_TTL_S = 10
PUSH_CONCURRENCY = 4
ACTIVE_STATES = {"Stable", "PreparingRebalance", "CompletingRebalance"}


# values ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupReading:
    """What the coordinator says about a group: state, members, committed offsets."""

    group: str
    state: str
    protocol_type: str
    members: int
    owned: frozenset[tuple[str, int]]
    committed: dict[tuple[str, int], int]


@dataclass(frozen=True, slots=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int
    high_watermark: int
    lag: int
    lag_seconds: float
    status: str
    complete: bool


@dataclass(frozen=True, slots=True)
class GroupLag:
    group: str
    state: str
    members: int
    status: str
    total_lag: int
    max_lag_seconds: float
    complete: float
    at_ms: int
    partitions: tuple[PartitionLag, ...] = field(default=())

    @property
    def at(self) -> datetime:
        return datetime.fromtimestamp(self.at_ms / 1000, tz=UTC)

    def message(self) -> dict[str, Any]:
        """The ``/ws/groups/<group>/`` message (and the lag API's body)."""
        return {
            "type": "lag",
            **self.summary(),
            "complete": self.complete,
            # Every field of a partition's lag, under its own name.
            "partitions": [asdict(p) for p in self.partitions],
            "at": self.at.isoformat().replace("+00:00", "Z"),
        }

    def summary(self) -> dict[str, Any]:
        """The group's line in the cluster view and the group list."""
        return {
            "group": self.group,
            "state": self.state,
            "members": self.members,
            "status": self.status,
            "total_lag": self.total_lag,
            "max_lag_seconds": self.max_lag_seconds,
        }


# the collector -------------------------------------------------------------------------------


class LagCollector:
    """Reads every group's lag and keeps the Burrow windows between ticks."""

    def __init__(
        self,
        gw: ClusterGateway,
        *,
        window_size: int = DEFAULT_WINDOW,
        commit_interval_ms: int = DEFAULT_COMMIT_INTERVAL_MS,
    ) -> None:
        self.gw = gw
        self.window_size = window_size
        self.commit_interval_ms = commit_interval_ms
        self.windows: dict[tuple[str, str, int], Window] = {}
        self._timestamps: dict[tuple[str, int, int], int] = {}
        self._clients: dict[tuple[str, int], BrokerClient] = {}
        self._last_hw: dict[tuple[str, int], int] = {}
        self.last_image: ClusterImage | None = None
        # The replica states read with the last image (the dashboard's disk use per broker).
        self.last_replicas: list[ReplicaStatus] = []

    # reading -------------------------------------------------------------------------------
    def read_groups(self, image: ClusterImage, only: str | None = None) -> list[GroupReading]:
        """Every group (or just ``only``) as its coordinator describes it."""
        endpoints = self._addresses(image, sorted(image.brokers))
        return self.gw.call(lambda: self._read_groups(endpoints, only), timeout=30)

    async def _read_groups(
        self, endpoints: dict[int, tuple[str, int]], only: str | None
    ) -> list[GroupReading]:
        per_broker = await asyncio.gather(
            *(self._read_broker(host, port, only) for host, port in endpoints.values())
        )
        seen: dict[str, GroupReading] = {}
        for readings in per_broker:
            for reading in readings:
                # During a coordinator move two brokers may list a group; keep the one that
                # has offsets (the new coordinator once it has loaded).
                if reading.group not in seen or (
                    reading.committed and not seen[reading.group].committed
                ):
                    seen[reading.group] = reading
        return [seen[g] for g in sorted(seen)]

    async def _read_broker(self, host: str, port: int, only: str | None) -> list[GroupReading]:
        client = self._client(host, port)
        try:
            listed = await client.request(
                ListGroupsRequest(states_filter=()), timeout=REQUEST_TIMEOUT_S
            )
            groups = [g for g in listed.groups if only is None or g.group_id == only]
            if not groups:
                return []
            ids = tuple(g.group_id for g in groups)
            described, fetched = await asyncio.gather(
                client.request(
                    DescribeGroupsRequest(groups=ids, include_authorized_operations=False),
                    timeout=REQUEST_TIMEOUT_S,
                ),
                client.request(
                    OffsetFetchRequest(
                        groups=tuple(OffsetFetchRequestGroup(group_id=g, topics=None) for g in ids),
                        require_stable=False,
                    ),
                    timeout=REQUEST_TIMEOUT_S,
                ),
            )
        except (BrokerClientError, OSError, TimeoutError) as exc:
            log.warning("broker %s:%d: reading groups failed: %s", host, port, exc)
            return []
        descriptions = {d.group_id: d for d in described.groups if d.error_code == 0}
        offsets: dict[str, dict[tuple[str, int], int]] = {}
        for group in fetched.groups:
            if group.error_code != ErrorCode.none:
                continue
            offsets[group.group_id] = {
                (t.name, p.partition_index): p.committed_offset
                for t in group.topics
                for p in t.partitions
                if p.error_code == ErrorCode.none and p.committed_offset >= 0
            }
        readings = []
        for listed_group in groups:
            description = descriptions.get(listed_group.group_id)
            if description is None or listed_group.group_id not in offsets:
                continue  # not (or no longer) coordinated here
            readings.append(
                GroupReading(
                    group=listed_group.group_id,
                    state=description.group_state,
                    protocol_type=description.protocol_type,
                    members=len(description.members),
                    owned=_owned(description),
                    committed=offsets[listed_group.group_id],
                )
            )
        return readings

    def _addresses(self, image: ClusterImage, ids: list[int]) -> dict[int, tuple[str, int]]:
        """The brokers' endpoints on the control plane's listener (those that have it)."""
        found = {}
        for broker_id in ids:
            try:
                found[broker_id] = self.gw.address(image.brokers[broker_id])
            except KafkaUnavailable as exc:
                log.warning("%s", exc.message)
        return found

    def _client(self, host: str, port: int) -> BrokerClient:
        client = self._clients.get((host, port))
        if client is None:
            # The control plane's credentials (WEIR_KAFKA_*), as the gateway's own clients.
            client = self.gw.security.broker_client(host, port, client_id="weir-monitor")
            self._clients[(host, port)] = client
        return client

    # record timestamps ----------------------------------------------------------------------
    def record_timestamps(
        self,
        wanted: set[tuple[str, int, int]],
        image: ClusterImage,
        leaders: dict[Any, int],
    ) -> dict[tuple[str, int, int], int]:
        """Timestamp (ms) of the record at (or first after) each wanted (topic, partition, offset).

        Keyed by offset, not by partition: groups reading one partition sit at different
        offsets, and each group's lag in seconds is the age of *its* first unconsumed record.
        """
        found: dict[tuple[str, int, int], int] = {}
        missing: dict[int, list[tuple[str, int, int]]] = {}
        for key in wanted:
            cached = self._timestamps.get(key)
            if cached is not None:
                found[key] = cached
                continue
            leader = leaders.get(key[:2], -1)
            if leader in image.brokers:
                missing.setdefault(leader, []).append(key)
        if missing:
            endpoints = self._addresses(image, list(missing))
            fetched = self.gw.call(lambda: self._fetch_timestamps(missing, endpoints), timeout=30)
            self._timestamps.update(fetched)
            found.update(fetched)
        # Forget what no group sits on any more.
        if len(self._timestamps) > 2 * len(wanted) + 1000:
            self._timestamps = {k: v for k, v in self._timestamps.items() if k in wanted}
        return found

    async def _fetch_timestamps(
        self,
        missing: dict[int, list[tuple[str, int, int]]],
        endpoints: dict[int, tuple[str, int]],
    ) -> dict[tuple[str, int, int], int]:
        # A Fetch names a partition once: offsets of one partition wanted by several groups
        # go out in successive rounds (usually there is one).
        requests = []
        for leader, wanted in missing.items():
            if leader not in endpoints:
                continue  # no endpoint on the control plane's listener (logged)
            rounds: list[list[tuple[str, int, int]]] = []
            for key in sorted(wanted):
                for round_ in rounds:
                    if all(other[:2] != key[:2] for other in round_):
                        round_.append(key)
                        break
                else:
                    rounds.append([key])
            requests.extend((endpoints[leader], round_) for round_ in rounds)
        results = await asyncio.gather(*(self._fetch_from(e, w) for e, w in requests))
        merged: dict[tuple[str, int, int], int] = {}
        for result in results:
            merged.update(result)
        return merged

    async def _fetch_from(
        self, endpoint: tuple[str, int], wanted: list[tuple[str, int, int]]
    ) -> dict[tuple[str, int, int], int]:
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for topic, partition, offset in wanted:
            by_topic.setdefault(topic, []).append((partition, offset))
        request = FetchRequest(
            replica_id=-1,
            max_wait=timedelta(0),
            min_bytes=0,
            max_bytes=FETCH_MAX_BYTES,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=tuple(
                FetchTopic(
                    topic=topic,
                    partitions=tuple(
                        # One byte: every partition still returns its first whole batch.
                        FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1)
                        for p, o in items
                    ),
                )
                for topic, items in by_topic.items()
            ),
            forgotten_topics_data=(),
            rack_id="",
        )
        try:
            response = await self._client(*endpoint).request(request, timeout=REQUEST_TIMEOUT_S)
        except (BrokerClientError, OSError, TimeoutError) as exc:
            log.warning("broker %s:%d: fetching record timestamps failed: %s", *endpoint, exc)
            return {}
        offsets = {(t, p): o for t, p, o in wanted}
        found: dict[tuple[str, int, int], int] = {}
        for topic_result in response.responses:
            for data in topic_result.partitions:
                key = (topic_result.topic, data.partition_index)
                offset = offsets.get(key)
                if offset is None or data.error_code != ErrorCode.none or not data.records:
                    continue
                timestamp = _timestamp_at(bytes(data.records), offset)
                if timestamp is not None:
                    found[(key[0], key[1], offset)] = timestamp
        return found

    # one tick ----------------------------------------------------------------------------------
    def collect(self, *, now_ms: int | None = None, only: str | None = None) -> list[GroupLag]:
        """Read the cluster and evaluate every group (or just ``only``)."""
        image = self.last_image = self.gw.image()
        states, self.last_replicas = self.gw.partition_states()
        readings = self.read_groups(image, only)
        now = int(time.time() * 1000) if now_ms is None else now_ms
        leaders = {key: state.leader for key, state in states.items()}
        for key, state in states.items():
            self._last_hw[key] = state.high_watermark
        for name, topic in image.topics.items():
            for index, partition in topic.partitions.items():
                leaders.setdefault((name, index), partition.leader)
        # Which records' timestamps we need: the first unconsumed of each lagging partition.
        wanted: set[tuple[str, int, int]] = set()
        for reading in readings:
            for key, committed in reading.committed.items():
                hw = self._last_hw.get(key)
                if key[0] in image.topics and hw is not None and hw > committed:
                    wanted.add((*key, self._first_unconsumed(key, committed, states)))
        timestamps = self.record_timestamps(wanted, image, leaders) if wanted else {}
        results = [self._evaluate(r, image, states, timestamps, now) for r in readings]
        if only is None:
            groups = {r.group for r in readings}
            self.windows = {k: w for k, w in self.windows.items() if k[0] in groups}
        return results

    @staticmethod
    def _first_unconsumed(key: tuple[str, int], committed: int, states: Any) -> int:
        """The offset whose record's age is the lag in seconds (retention may have passed
        the committed offset)."""
        state = states.get(key)
        return max(committed, state.log_start_offset) if state is not None else committed

    def _evaluate(
        self,
        reading: GroupReading,
        image: ClusterImage,
        states: Any,
        timestamps: dict[tuple[str, int, int], int],
        now: int,
    ) -> GroupLag:
        live_member_owns = reading.state in ACTIVE_STATES
        partitions = []
        for (topic, partition), committed in sorted(reading.committed.items()):
            if topic not in image.topics:
                continue  # deleted topic: its offsets wait for expiry
            hw = self._last_hw.get((topic, partition), committed)
            lag = max(0, hw - committed)
            offset = self._first_unconsumed((topic, partition), committed, states)
            stamp = timestamps.get((topic, partition, offset))
            lag_seconds = round(max(0, now - stamp) / 1000, 3) if lag and stamp else 0.0
            window_key = (reading.group, topic, partition)
            window = self.windows.get(window_key)
            if window is None:
                window = self.windows[window_key] = Window(self.window_size)
            last = window.last
            owned = live_member_owns and ((topic, partition) in reading.owned or not reading.owned)
            if (
                last is None
                or last.offset != committed
                or (owned and now - last.timestamp_ms >= self.commit_interval_ms)
            ):
                window.add(Commit(committed, lag, now))
            evaluation = evaluate_partition(
                window.commits, current_lag=lag, now_ms=now, window_size=self.window_size
            )
            partitions.append(
                PartitionLag(
                    topic=topic,
                    partition=partition,
                    committed=committed,
                    high_watermark=hw,
                    lag=lag,
                    lag_seconds=lag_seconds,
                    status=str(evaluation.status),
                    complete=evaluation.complete,
                )
            )
        status = evaluate_group(PartitionStatus[p.status] for p in partitions)
        if not partitions and reading.state == "Dead":
            status = GroupStatus.NOTFOUND
        complete = (
            round(sum(p.complete for p in partitions) / len(partitions), 3) if partitions else 1.0
        )
        return GroupLag(
            group=reading.group,
            state=reading.state,
            members=reading.members,
            status=str(status),
            total_lag=sum(p.lag for p in partitions),
            max_lag_seconds=max((p.lag_seconds for p in partitions), default=0.0),
            complete=complete,
            at_ms=now,
            partitions=tuple(partitions),
        )

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()

    def close(self) -> None:
        try:
            self.gw.call(self.aclose, timeout=5)
        except Exception:  # closing is best effort
            log.debug("closing monitor connections failed", exc_info=True)


def _owned(description: Any) -> frozenset[tuple[str, int]]:
    owned: set[tuple[str, int]] = set()
    if description.protocol_type != "consumer":
        return frozenset()
    for member in description.members:
        if not member.member_assignment:
            continue
        try:
            assignment = decode_assignment(bytes(member.member_assignment))
        except ValueError:
            continue
        for topic, partitions in assignment.partitions:
            owned.update((topic, p) for p in partitions)
    return frozenset(owned)


def _timestamp_at(records: bytes, offset: int) -> int | None:
    """Timestamp of the first record at or after ``offset`` in fetched batches."""
    try:
        for pos, header in iter_batches(records, check_crc=False):
            if header.is_control or header.last_offset < offset:
                continue
            for record_offset, timestamp in iter_offsets_and_timestamps(records, pos):
                if record_offset >= offset:
                    return timestamp
    except CorruptBatchError:
        return None  # a truncated last batch: what came before it was searched
    return None


def _iso_ms(ms: int) -> str:
    """Epoch milliseconds as the ISO-8601 UTC text every monitor message carries."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


# the cluster view ----------------------------------------------------------------------------


def cluster_view(
    image: ClusterImage,
    groups: Iterable[GroupLag],
    *,
    now_ms: int | None = None,
    broker_extra: dict[int, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The ``/ws/cluster/`` message: brokers, controller, partition health, groups.

    ``broker_extra`` adds facts per broker (traffic rates, leaders, replicas, disk use).
    """
    extra = broker_extra or {}
    live = image.live_broker_ids
    health = health_counts(
        (p for topic in image.topics.values() for p in topic.partitions.values()), live=live
    )
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return {
        "type": "cluster",
        "brokers": [
            {
                "id": broker_id,
                "host": broker.host,
                "port": broker.port,
                "rack": broker.rack,
                "alive": broker_id in live,
                **extra.get(broker_id, {}),
            }
            for broker_id, broker in sorted(image.registrations.items())
        ],
        "controller": image.controller_id,
        "partitions": {
            "count": health.partitions,
            "under_replicated": health.under_replicated,
            "offline": health.offline,
        },
        "topics": len(image.topics),
        "groups": [g.summary() for g in groups],
        "at": _iso_ms(now),
    }


# the monitor ---------------------------------------------------------------------------------


class Monitor:
    """One collector plus what a tick does with its results (see the module docstring)."""

    def __init__(
        self,
        gw: ClusterGateway,
        *,
        window_size: int = DEFAULT_WINDOW,
        commit_interval_ms: int = DEFAULT_COMMIT_INTERVAL_MS,
        store_history: bool = True,
        history_interval_ms: int | None = None,
    ) -> None:
        self.gw = gw
        self.collector = LagCollector(
            gw, window_size=window_size, commit_interval_ms=commit_interval_ms
        )
        self.store_history = store_history
        self.traffic = TrafficMeter()
        if history_interval_ms is None:
            history_interval_ms = int(settings.WEIR_LAG_HISTORY_INTERVAL_S * 1000)
        self.history_interval_ms = history_interval_ms
        self._history_due = 0
        self.statuses: dict[str, str] = {}

    def tick(self, *, now_ms: int | None = None) -> list[GroupLag]:
        """Collect, publish, store and alert; the groups' snapshots."""
        from groups import lag, services, webhooks

        groups = self.collector.collect(now_ms=now_ms)
        now = groups[0].at_ms if groups else int(time.time() * 1000)
        image = self.collector.last_image or self.gw.image()
        cluster = json.dumps(
            cluster_view(image, groups, now_ms=now, broker_extra=self._broker_extra(image, now))
        )
        texts = {g.group: json.dumps(g.message()) for g in groups}
        lag.store_snapshots(
            self.gw, texts, [g.summary() for g in groups], cluster, ttl_s=SNAPSHOT_TTL_S
        )
        try:
            self.gw.call(lambda: _push(texts, cluster), timeout=10)
        except Exception:  # a missing channel layer must not stop the monitor
            log.warning("pushing to websockets failed", exc_info=True)
        if self.store_history and now >= self._history_due:
            # History is sampled (every WEIR_LAG_HISTORY_INTERVAL_S), the live view is not.
            services.lag_history_record(groups=groups)
            self._history_due = now + self.history_interval_ms
        for group in groups:
            previous = self.statuses.get(group.group)
            if previous is not None and previous != group.status:
                webhooks.notify_status_change(group=group, previous_status=previous)
            self.statuses[group.group] = group.status
        listed = {g.group for g in groups}
        self.statuses = {g: s for g, s in self.statuses.items() if g in listed}
        return groups

    def _broker_extra(self, image: ClusterImage, now_ms: int) -> dict[int, dict[str, Any]]:
        """Traffic rates and replica counts per broker, for the dashboard's cluster views."""
        try:
            rates = self.traffic.tick(self.gw, at=_iso_ms(now_ms))
            facts = broker_facts(image, self.collector.last_replicas)
        except Exception:  # the lag view must not depend on the traffic counters
            log.warning("reading broker traffic failed", exc_info=True)
            return {}
        return {b: {**facts.get(b, {}), **rates.get(b, {})} for b in image.registrations}

    def close(self) -> None:
        self.collector.close()


async def _push(texts: dict[str, str], cluster: str) -> None:
    from channels.layers import get_channel_layer

    from groups.lag import channel_group_name

    layer = get_channel_layer()
    if layer is None:
        return
    messages = [(channel_group_name(group), text) for group, text in texts.items()]
    messages.append((channel_group_name(None), cluster))
    # A few sends at a time: the layer's connection pool is small, and one group_send per
    # group costs one Redis round trip (nothing is stored for groups nobody watches).
    limit = asyncio.Semaphore(PUSH_CONCURRENCY)

    async def send(name: str, text: str) -> None:
        async with limit:
            await layer.group_send(name, {"type": "lag.update", "text": text})

    await asyncio.gather(*(send(name, text) for name, text in messages))
