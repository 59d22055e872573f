"""Prometheus metrics at ``/metrics``: the control plane's HTTP traffic and the whole cluster.

Theory of operation
-------------------
Three sources, rendered in Prometheus' text format (version 0.0.4):

* **HTTP** — :class:`MetricsMiddleware` counts every request by route pattern, method and
  status and times it (``weir_http_requests_total``, ``weir_http_request_duration_seconds``)
  in prometheus_client objects of this process.
* **Cluster** — collected from Redis at scrape time (nothing is kept between scrapes except
  a short lag cache): the metadata image (brokers, controller, replicas, ISR), the partition
  states leaders publish every second (LEO, HW, log start, size) and the request counters
  every broker publishes every second (:mod:`weir.metrics`), rendered per broker with a
  ``broker`` label under the names of Kafka's JMX exporter
  (``kafka_server_brokertopicmetrics_bytesin_total``,
  ``kafka_network_requestmetrics_requests_total``, ...) and, for topics and groups, of
  kafka_exporter (``kafka_topic_partition_current_offset``, ``kafka_consumergroup_lag``), so
  existing Grafana dashboards work. Consumer-group lag (HW - committed offset) reads the
  committed offsets the lag monitor's way (batched per coordinator) and caches them for
  :data:`LAG_CACHE_S` seconds.
* **Mirrors** — what every ``mirror-maker`` process publishes to Redis
  (:mod:`weir.mirror.status`), under MM2's MirrorSourceConnector names as the JMX exporter
  renders them (``kafka_connect_mirror_mirrorsourceconnector_record_count``, ...) and Weir's
  own (``weir_mirror_lag_records``, ``weir_mirror_checkpoint_age_seconds``, ...).

``/metrics?broker=N`` serves only broker N's series. The endpoint is open, like any exporter,
unless ``WEIR_METRICS_REQUIRE_AUTH=1`` (environment or Django setting): then it needs the
viewer role through Basic or Token authentication.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import extend_schema
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from controlplane.errors import ApiError, BadRequest, NotFound
from controlplane.roles import RolePermission
from topics.health import partition_health
from weir.metrics import broker_metrics_key, read_broker_metrics

log = logging.getLogger(__name__)

__all__ = [
    "LAG_CACHE_S",
    "MetricsMiddleware",
    "MetricsView",
    "cluster_families",
    "mirror_families",
]

LAG_CACHE_S = 5.0
# A broker snapshot older than this belongs to a broker that stopped publishing.
STALE_SNAPSHOT_MS = 5_000

HTTP_REGISTRY = CollectorRegistry(auto_describe=True)
HTTP_REQUESTS = Counter(
    "weir_http_requests",
    "HTTP requests served by the control plane",
    ["route", "method", "status"],
    registry=HTTP_REGISTRY,
)
HTTP_LATENCY = Histogram(
    "weir_http_request_duration_seconds",
    "Time to answer an HTTP request",
    ["route", "method"],
    registry=HTTP_REGISTRY,
)


class MetricsMiddleware:
    """Counts and times every HTTP request by route pattern (not by URL: bounded labels)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = f"/{match.route}" if match is not None and match.route else "<unmatched>"
        method = request.method if request.method in _METHODS else "OTHER"
        HTTP_REQUESTS.labels(route, method, str(response.status_code)).inc()
        HTTP_LATENCY.labels(route, method).observe(time.perf_counter() - started)
        return response


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


# cluster metrics -----------------------------------------------------------------------------


def _api_name(api_key: int) -> str:
    from kio.schema.index import api_key_map

    name = api_key_map.get(api_key)
    return "".join(p.capitalize() for p in name.split("_")) if name else f"Api{api_key}"


class _LagCache:
    """Committed offsets per group, refreshed at most every ``LAG_CACHE_S`` seconds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at = -1e18
        self._key: object = None
        self._offsets: dict[str, dict[tuple[str, int], int]] = {}

    def committed(self, gw: Any) -> dict[str, dict[tuple[str, int], int]]:
        with self._lock:
            now = time.monotonic()
            if self._key is not gw or now - self._at > LAG_CACHE_S:
                self._offsets = _fetch_committed(gw)
                self._at = time.monotonic()
                self._key = gw
            return self._offsets


def _fetch_committed(gw: Any) -> dict[str, dict[tuple[str, int], int]]:
    """Every group's committed offsets, read the lag monitor's way: batched per coordinator
    (ListGroups, DescribeGroups, one OffsetFetch for many groups), not one call per group."""
    from groups.monitor import LagCollector

    collector = LagCollector(gw)
    try:
        readings = collector.read_groups(gw.image())
    except Exception:  # a scrape must not fail because a coordinator is away
        log.debug("reading committed offsets failed", exc_info=True)
        return {}
    finally:
        collector.close()
    return {reading.group: dict(reading.committed) for reading in readings}


_LAG = _LagCache()


def _gauge(name: str, doc: str, labels: Iterable[str] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=list(labels))


def _families(
    kind: type[GaugeMetricFamily] | type[CounterMetricFamily],
    table: dict[str, tuple[str, str]],
    labels: Iterable[str],
) -> dict[str, Any]:
    """One family of ``kind`` per entry of ``table`` (key -> (name, help)), by key."""
    return {key: kind(name, doc, labels=list(labels)) for key, (name, doc) in table.items()}


def _selected(
    snapshots: dict[int, dict[str, Any]], only: int | None
) -> list[tuple[int, dict[str, Any]]]:
    """The brokers' snapshots in broker order (only broker ``only``'s when given)."""
    return [(b, snap) for b, snap in sorted(snapshots.items()) if only is None or b == only]


# Each broker's byte counters: snapshot field -> (Kafka JMX exporter name, help).
_BROKER_COUNTERS = {
    "bytes_in": (
        "kafka_server_brokertopicmetrics_bytesin_total",
        "Produce request bytes received",
    ),
    "bytes_out": (
        "kafka_server_brokertopicmetrics_bytesout_total",
        "Fetch response bytes sent to consumers and followers",
    ),
    "replication_bytes_out": (
        "kafka_server_brokertopicmetrics_replicationbytesout_total",
        "Fetch response bytes sent to follower replicas",
    ),
    "network_bytes_in": (
        "kafka_server_socketservermetrics_incoming_byte_total",
        "Request bytes received, every API",
    ),
    "network_bytes_out": (
        "kafka_server_socketservermetrics_outgoing_byte_total",
        "Response bytes sent, every API",
    ),
}

# Each broker process's own gauges (``weir.process_stats``): snapshot field -> (name, help).
_PROCESS_GAUGES = {
    "rss_bytes": ("weir_broker_process_resident_memory_bytes", "Broker resident memory"),
    "open_fds": ("weir_broker_process_open_fds", "Broker open file descriptors"),
    "asyncio_tasks": ("weir_broker_asyncio_tasks", "Live asyncio tasks in the broker"),
    "producer_ids": (
        "weir_broker_producer_ids",
        "Idempotent producer ids remembered across the broker's replicas",
    ),
}


def _broker_families(snapshots: dict[int, dict[str, Any]], only: int | None) -> list[Metric]:
    """Request counters of each broker (``broker`` label, Kafka JMX exporter names)."""
    totals = _families(CounterMetricFamily, _BROKER_COUNTERS, ["broker"])
    requests = CounterMetricFamily(
        "kafka_network_requestmetrics_requests_total",
        "Requests answered, by API",
        labels=["broker", "request"],
    )
    latency = HistogramMetricFamily(
        "kafka_network_requestmetrics_totaltimems",
        "Time from reading a request to sending its response, in milliseconds",
        labels=["broker", "request"],
    )
    process = _families(GaugeMetricFamily, _PROCESS_GAUGES, ["broker"])
    for broker, snap in _selected(snapshots, only):
        label = str(broker)
        for field, family in totals.items():
            family.add_metric([label], snap.get(field, 0))
        for field, value in snap.get("process", {}).items():
            if field in process:
                process[field].add_metric([label], value)
        bounds = snap.get("latency_buckets_ms", [])
        for key, stats in sorted(snap.get("apis", {}).items(), key=lambda kv: int(kv[0])):
            name = _api_name(int(key))
            requests.add_metric([label, name], stats["count"])
            cumulative, buckets = 0, []
            for bound, count in zip([*bounds, "+Inf"], stats["buckets"], strict=False):
                cumulative += count
                buckets.append((str(bound) if bound == "+Inf" else f"{float(bound)}", cumulative))
            latency.add_metric([label, name], buckets, stats["time_ns"] / 1_000_000)
    return [
        *totals.values(),
        *process.values(),
        requests,
        latency,
        *_quota_families(snapshots, only),
    ]


# Client quota figures per type (weir.quotas): Kafka's JMX names for ``kafka.server:type=
# Produce|Fetch|Request,user=...,client-id=...`` (byte-rate / request-time, throttle-time).
_QUOTA_RATE = {
    "Produce": ("kafka_server_produce_byte_rate", "Produce bytes per second under a quota"),
    "Fetch": ("kafka_server_fetch_byte_rate", "Fetch bytes per second under a quota"),
    "Request": (
        "kafka_server_request_request_time",
        "Request handling time, percent of one thread, under a quota",
    ),
}


def _quota_families(snapshots: dict[int, dict[str, Any]], only: int | None) -> list[Metric]:
    """Per quota entity (metric tags ``user``, ``client_id``): rate, quota, throttling."""
    labels = ["broker", "user", "client_id"]
    rates = _families(GaugeMetricFamily, _QUOTA_RATE, labels)
    throttle = {
        t: _gauge(
            f"kafka_server_{t.lower()}_throttle_time",
            f"Average throttle time of {t} requests over the quota window, in milliseconds",
            labels,
        )
        for t in _QUOTA_RATE
    }
    limit = _gauge("weir_client_quota_limit", "The quota applied", ["type", *labels])
    throttled = CounterMetricFamily(
        "weir_client_quota_throttled_requests",
        "Requests throttled by a client quota",
        labels=["type", *labels],
    )
    for broker, snap in _selected(snapshots, only):
        for row in snap.get("client_quotas", []):
            kind = row.get("type")
            if kind not in _QUOTA_RATE:
                continue
            tags = [str(broker), row.get("user", ""), row.get("client_id", "")]
            rates[kind].add_metric(tags, row.get("rate", 0.0))
            throttle[kind].add_metric(tags, row.get("throttle_time_avg_ms", 0.0))
            if row.get("quota") is not None:
                limit.add_metric([kind, *tags], row["quota"])
            throttled.add_metric([kind, *tags], row.get("throttled_requests", 0))
    return [*rates.values(), *throttle.values(), limit, throttled]


def cluster_families(gw: Any, *, only_broker: int | None = None) -> list[Metric]:
    """Every cluster series, read from Redis now (``only_broker``: one broker's series)."""
    image = gw.image()
    states, _ = gw.partition_states()
    cutoff = int(time.time() * 1000) - STALE_SNAPSHOT_MS
    snapshots = {
        b: s
        for b, s in read_broker_metrics(gw.redis.hgetall(broker_metrics_key(gw.keys))).items()
        if s.get("updated_ms", 0) >= cutoff
    }
    live = set(image.brokers)
    brokers = sorted(set(image.registrations) | live)
    if only_broker is not None:
        brokers = [b for b in brokers if b == only_broker]
    families = _broker_families(snapshots, only_broker)

    # per broker: replica manager and controller gauges
    partition_count = _gauge(
        "kafka_server_replicamanager_partitioncount", "Replicas hosted", ["broker"]
    )
    leader_count = _gauge("kafka_server_replicamanager_leadercount", "Partitions led", ["broker"])
    urp_by_broker = _gauge(
        "kafka_server_replicamanager_underreplicatedpartitions",
        "Partitions this broker leads whose ISR is smaller than the replica set",
        ["broker"],
    )
    under_min_by_broker = _gauge(
        "kafka_server_replicamanager_underminisrpartitioncount",
        "Partitions this broker leads whose ISR is below min.insync.replicas",
        ["broker"],
    )
    active_controller = _gauge(
        "kafka_controller_kafkacontroller_activecontrollercount",
        "1 on the broker that is the active controller",
        ["broker"],
    )
    broker_up = _gauge("weir_broker_up", "1 while the broker holds its lease", ["broker"])
    replicas = dict.fromkeys(brokers, 0)
    leaders = dict.fromkeys(brokers, 0)
    urp = dict.fromkeys(brokers, 0)
    under_min = dict.fromkeys(brokers, 0)

    # per partition
    leo = _gauge("kafka_log_log_logendoffset", "Log end offset", ["topic", "partition"])
    log_start = _gauge("kafka_log_log_logstartoffset", "Log start offset", ["topic", "partition"])
    size = _gauge("kafka_log_log_size", "Bytes on the leader's disk", ["topic", "partition"])
    hw = _gauge(
        "kafka_topic_partition_current_offset",
        "High watermark (what consumers can read up to)",
        ["topic", "partition"],
    )
    oldest = _gauge(
        "kafka_topic_partition_oldest_offset", "Log start offset", ["topic", "partition"]
    )
    part_leader = _gauge("kafka_topic_partition_leader", "Leader broker id", ["topic", "partition"])
    part_replicas = _gauge(
        "kafka_topic_partition_replicas", "Replica count", ["topic", "partition"]
    )
    part_isr = _gauge(
        "kafka_topic_partition_in_sync_replica", "In-sync replica count", ["topic", "partition"]
    )
    part_urp = _gauge(
        "kafka_topic_partition_under_replicated_partition",
        "1 when the ISR is smaller than the replica set",
        ["topic", "partition"],
    )
    topic_partitions = _gauge("kafka_topic_partitions", "Partitions of the topic", ["topic"])

    offline_total = urp_total = under_min_total = partitions_total = 0
    cluster_min_isr = int(image.broker_config("").get("min.insync.replicas", "1") or 1)
    for topic in sorted(image.topics.values(), key=lambda t: t.name):
        override = image.topic_config(topic.name).get("min.insync.replicas")
        if only_broker is None:
            topic_partitions.add_metric([topic.name], len(topic.partitions))
        for p in sorted(topic.partitions.values(), key=lambda p: p.partition):
            partitions_total += 1
            labels = [topic.name, str(p.partition)]
            state = states.get((topic.name, p.partition))
            # The topic's override, else the leader's own default (static configs are
            # only known to the broker, which publishes it with its counters).
            min_isr = int(
                override
                or snapshots.get(p.leader, {}).get("min_insync_replicas")
                or cluster_min_isr
            )
            health = partition_health(p, live=live, state=state, min_isr=min_isr)
            isr, offline = health.isr, health.offline
            is_urp, is_under_min = health.under_replicated, health.under_min_isr
            offline_total += offline
            urp_total += is_urp
            under_min_total += is_under_min
            for b in p.replicas:
                if b in replicas:
                    replicas[b] += 1
            if p.leader in leaders:
                leaders[p.leader] += 1
                urp[p.leader] += is_urp
                under_min[p.leader] += is_under_min
            if only_broker is not None:
                continue
            part_leader.add_metric(labels, p.leader)
            part_replicas.add_metric(labels, len(p.replicas))
            part_isr.add_metric(labels, len(isr))
            part_urp.add_metric(labels, int(is_urp))
            if state is not None:
                leo.add_metric(labels, state.log_end_offset)
                hw.add_metric(labels, state.high_watermark)
                log_start.add_metric(labels, state.log_start_offset)
                oldest.add_metric(labels, state.log_start_offset)
                size.add_metric(labels, state.size_bytes)
    for b in brokers:
        label = [str(b)]
        partition_count.add_metric(label, replicas[b])
        leader_count.add_metric(label, leaders[b])
        urp_by_broker.add_metric(label, urp[b])
        under_min_by_broker.add_metric(label, under_min[b])
        active_controller.add_metric(label, int(b == image.controller_id))
        broker_up.add_metric(label, int(b in live))
    families += [
        partition_count,
        leader_count,
        urp_by_broker,
        under_min_by_broker,
        active_controller,
        broker_up,
    ]
    if only_broker is not None:
        return families

    cluster = [
        _gauge("kafka_brokers", "Live brokers"),
        _gauge("kafka_controller_kafkacontroller_activebrokercount", "Live brokers"),
        _gauge("weir_controller_id", "Broker id of the active controller (-1: none)"),
        _gauge(
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "Partitions without a live leader",
        ),
        _gauge("kafka_controller_kafkacontroller_globalpartitioncount", "Partitions"),
        _gauge("kafka_controller_kafkacontroller_globaltopiccount", "Topics"),
        _gauge("weir_cluster_underreplicated_partitions", "Partitions with ISR < replicas"),
        _gauge(
            "weir_cluster_under_min_isr_partitions", "Partitions with ISR < min.insync.replicas"
        ),
    ]
    values = [
        len(live),
        len(live),
        image.controller_id if image.controller_id is not None else -1,
        offline_total,
        partitions_total,
        len(image.topics),
        urp_total,
        under_min_total,
    ]
    for family, value in zip(cluster, values, strict=True):
        family.add_metric([], value)

    lag = _gauge(
        "kafka_consumergroup_lag",
        "High watermark minus the group's committed offset",
        ["group", "topic", "partition"],
    )
    committed_offset = _gauge(
        "kafka_consumergroup_current_offset",
        "The group's committed offset",
        ["group", "topic", "partition"],
    )
    for group, offsets in sorted(_LAG.committed(gw).items()):
        for (topic, partition), offset in sorted(offsets.items()):
            labels = [group, topic, str(partition)]
            committed_offset.add_metric(labels, offset)
            state = states.get((topic, partition))
            if state is not None:
                lag.add_metric(labels, max(0, state.high_watermark - offset))
    return [
        *cluster,
        *families,
        topic_partitions,
        part_leader,
        part_replicas,
        part_isr,
        part_urp,
        leo,
        hw,
        log_start,
        oldest,
        size,
        lag,
        committed_offset,
    ]


# Per mirrored partition, MM2's MirrorSourceConnector metrics as the JMX exporter renders them
# (``kafka.connect.mirror:type=MirrorSourceConnector,target=..,topic=..,partition=..``; the
# topic is the target topic, as MM2 tags it): PartitionStatus field -> (name, help).
_MIRROR_PARTITION = {
    "records": (
        "kafka_connect_mirror_mirrorsourceconnector_record_count",
        "Records replicated (by the live processes, since each started)",
    ),
    "bytes": (
        "kafka_connect_mirror_mirrorsourceconnector_byte_count",
        "Bytes replicated (by the live processes, since each started)",
    ),
    "record_age_ms": (
        "kafka_connect_mirror_mirrorsourceconnector_record_age_ms",
        "Age of the last record when the mirror read it",
    ),
    "replication_latency_ms": (
        "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms",
        "Last record: target acknowledgement time minus the record's timestamp",
    ),
    "replication_latency_max_ms": (
        "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max",
        "Highest replication latency since the previous status",
    ),
    "lag_records": ("weir_mirror_lag_records", "Source records not yet mirrored"),
    "lag_seconds": (
        "weir_mirror_lag_seconds",
        "Age of the oldest source record not yet mirrored (0 when none)",
    ),
}


def mirror_families(gw: Any) -> list[Metric]:
    """The mirror's series from what the ``mirror-maker`` processes publish (no cluster reads):
    per partition MM2's names and Weir's lag, per flow the processes and the ages of the last
    checkpoint and heartbeat."""
    from weir.mirror.status import StatusStore, now_ms

    statuses = StatusStore(gw.redis, gw.cluster_id).read_all()
    labels = ["source", "target", "topic", "partition"]
    partition = _families(GaugeMetricFamily, _MIRROR_PARTITION, labels)
    processes = _gauge("weir_mirror_processes", "Live mirror-maker processes", ["source", "target"])
    checkpoint_age = _gauge(
        "weir_mirror_checkpoint_age_seconds",
        "Seconds since the flow last wrote checkpoints",
        ["source", "target"],
    )
    heartbeat_age = _gauge(
        "weir_mirror_heartbeat_age_seconds",
        "Seconds since the flow last wrote a heartbeat",
        ["source", "target"],
    )
    by_flow: dict[tuple[str, str], list[Any]] = {}
    for status in statuses:  # sorted by flow then process: the later report of a partition wins
        by_flow.setdefault((status.source, status.target), []).append(status)
    now = now_ms()
    for (source, target), found in sorted(by_flow.items()):
        processes.add_metric([source, target], len(found))
        rows = {}
        for status in sorted(found, key=lambda s: s.updated_at_ms):
            rows.update({(p.target_topic, p.partition): p for p in status.partitions})
        for (topic, number), row in sorted(rows.items()):
            for field, family in partition.items():
                value = getattr(row, field)
                if value is not None and value >= 0:
                    family.add_metric([source, target, topic, str(number)], value)
        for family, stamps in (
            (checkpoint_age, [s.last_checkpoint_ms for s in found]),
            (heartbeat_age, [s.last_heartbeat_ms for s in found]),
        ):
            last = max((t for t in stamps if t is not None), default=None)
            if last is not None:
                family.add_metric([source, target], max(0.0, (now - last) / 1000))
    return [*partition.values(), processes, checkpoint_age, heartbeat_age]


class _Families:
    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> list[Metric]:
        return self._families


def _require_auth() -> bool:
    return str(settings.WEIR_METRICS_REQUIRE_AUTH).lower() in ("1", "true", "yes")


@extend_schema(exclude=True)
class MetricsView(APIView):
    """Prometheus text exposition for the control plane and every broker."""

    def get_permissions(self) -> list[BasePermission]:
        return [RolePermission()] if _require_auth() else [AllowAny()]

    def get_authenticators(self) -> list[Any]:
        return super().get_authenticators() if _require_auth() else []

    def get(self, request: Request) -> HttpResponse:
        from controlplane.cluster import gateway

        only = request.query_params.get("broker")
        broker: int | None = None
        if only is not None:
            try:
                broker = int(only)
            except ValueError:
                raise BadRequest(f"broker must be a broker id, got {only!r}") from None
        gw = gateway()
        if broker is not None and broker not in gw.image().registrations:
            raise NotFound(f"broker {broker} is not registered")
        try:
            families = cluster_families(gw, only_broker=broker)
        except ApiError as exc:  # the cluster is away: still serve the control plane's own
            families = [_gauge("weir_cluster_scrape_error", exc.message)]
            families[0].add_metric([], 1)
        if broker is None:
            try:
                families += mirror_families(gw)
            except Exception:  # the mirror's series must never cost the cluster's
                log.warning("reading the mirror statuses failed", exc_info=True)
        text = generate_latest(_Families(families))
        if broker is None:
            text = generate_latest(HTTP_REGISTRY) + text
        return HttpResponse(text, content_type=CONTENT_TYPE_PLAIN_0_0_4)
