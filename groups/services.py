"""Writes of the groups app: lag history, webhooks, offset resets, forced rebalances.

Offset resets follow ``kafka-consumer-groups.sh --reset-offsets`` (and Weir's
``manage.py consumer-groups``): the target of each partition comes from the strategy, is
clamped into [log start, log end], and is written only when the group is inactive (Empty or
Dead); a dry run (the default) answers the same table without writing. Everything goes over
the Kafka protocol with the shared AdminClient; a forced rebalance, for which Kafka has no
request, goes to the coordinator through Redis (:mod:`weir.group_admin`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import redis
from django.conf import settings
from django.db.models import Max
from django.db.models.functions import TruncMinute
from django.utils import timezone
from kio.schema.errors import ErrorCode

from controlplane.cluster import gateway
from controlplane.errors import (
    BadRequest,
    Conflict,
    KafkaUnavailable,
    NotFound,
    Unprocessable,
)
from controlplane.validation import iso_datetime_ms
from groups.models import GroupStatusSample, LagSample, WebhookConfig
from groups.selectors import (
    admin_result,
    group_committed_offsets,
    group_description,
    kafka_state,
    partition_offsets,
)
from weir.coordinator.offset_reset import STRATEGIES, reset_target
from weir.group_admin import force_group_rebalance

if TYPE_CHECKING:
    from groups.monitor import GroupLag, PartitionLag

__all__ = [
    "RESET_STRATEGIES",
    "OffsetResetRow",
    "group_force_rebalance",
    "group_offsets_reset",
    "group_rebalance_send",
    "lag_history_downsample",
    "lag_history_record",
    "webhook_create",
    "webhook_delete",
    "webhook_update",
]

RESET_STRATEGIES = STRATEGIES
INACTIVE_STATES = {"Empty", "Dead"}
FULL_RESOLUTION = timedelta(hours=1)
ADMIN_TIMEOUT_S = 15.0


# lag history -----------------------------------------------------------------------------------


def _lag_sample(group: GroupLag, lag: PartitionLag) -> LagSample:
    """A partition's row: the monitor's numbers under the model's column names. Whether the
    partition's window was full is left out: history keeps the numbers, not the window."""
    columns = asdict(lag)
    del columns["complete"]
    columns["committed_offset"] = columns.pop("committed")
    return LagSample(group=group.group, at=group.at, **columns)


def lag_history_record(*, groups: Iterable[GroupLag]) -> int:
    """Store one tick's samples (one row per partition and one per group); rows written."""
    lag_rows: list[LagSample] = []
    status_rows: list[GroupStatusSample] = []
    for group in groups:
        status_rows.append(
            GroupStatusSample(
                group=group.group,
                at=group.at,
                status=group.status if group.status != "NOTFOUND" else "OK",
                total_lag=group.total_lag,
                max_lag_seconds=group.max_lag_seconds,
            )
        )
        lag_rows.extend(_lag_sample(group, p) for p in group.partitions)
    LagSample.objects.bulk_create(lag_rows, batch_size=500)
    GroupStatusSample.objects.bulk_create(status_rows, batch_size=500)
    return len(lag_rows) + len(status_rows)


def lag_history_downsample(*, now: datetime | None = None, since: datetime | None = None) -> int:
    """Keep the last sample per minute before the last hour; drop beyond retention.

    ``since`` limits the work to samples newer than it (the periodic task passes where its
    previous run stopped). Returns how many rows were deleted.
    """
    now = now or timezone.now()
    cutoff = now - FULL_RESOLUTION
    retention = now - timedelta(days=settings.WEIR_LAG_HISTORY_DAYS)
    deleted = LagSample.objects.filter(at__lt=retention).delete()[0]
    deleted += GroupStatusSample.objects.filter(at__lt=retention).delete()[0]
    for model, keys in (
        (LagSample, ("group", "topic", "partition")),
        (GroupStatusSample, ("group",)),
    ):
        window = model.objects.filter(at__lt=cutoff)
        if since is not None:
            # Whole minutes only: a minute straddling ``since`` is compared in full.
            window = window.filter(at__gte=since.replace(second=0, microsecond=0))
        keep = (
            window.annotate(minute=TruncMinute("at"))
            .values(*keys, "minute")
            .annotate(keep=Max("id"))
            .values_list("keep", flat=True)
        )
        deleted += window.exclude(id__in=list(keep)).delete()[0]
    return deleted


# webhooks --------------------------------------------------------------------------------------


def webhook_create(
    *, url: str, group: str = "", min_status: str = "WARN", enabled: bool = True, secret: str = ""
) -> WebhookConfig:
    return WebhookConfig.objects.create(
        url=url, group=group, min_status=min_status, enabled=enabled, secret=secret
    )


def webhook_update(*, webhook: WebhookConfig, **fields: Any) -> WebhookConfig:
    allowed = {"url", "group", "min_status", "enabled", "secret"}
    for name, value in fields.items():
        if name in allowed:
            setattr(webhook, name, value)
    webhook.save()
    return webhook


def webhook_delete(*, webhook: WebhookConfig) -> None:
    webhook.delete()


# offset resets ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetResetRow:
    topic: str
    partition: int
    current_offset: int | None
    new_offset: int


def _group_state(admin: Any, group: str) -> str:
    return kafka_state(group_description(admin=admin, group=group))


_DURATION = re.compile(
    r"^P(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)


def parse_duration(text: str) -> timedelta:
    """ISO-8601 ``PnDTnHnMnS`` (what ``--by-duration`` takes)."""
    match = _DURATION.match(text.strip().upper()) if isinstance(text, str) else None
    if match is None or text.strip().upper() in ("P", "PT"):
        raise BadRequest(f"value {text!r}: a by-duration reset needs an ISO-8601 duration (PT10M)")
    parts = {k: float(v) for k, v in match.groupdict().items() if v}
    return timedelta(**parts)


def parse_datetime(value: Any) -> int:
    """Epoch milliseconds from an ISO-8601 datetime (UTC unless zoned) or a number of ms."""
    if isinstance(value, bool):
        raise BadRequest("value: a datetime reset needs an ISO-8601 datetime or epoch ms")
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str):
        found = iso_datetime_ms(value)
        if found is not None:
            return found
    raise BadRequest(
        f"value {value!r}: a datetime reset needs an ISO-8601 datetime "
        "(2026-11-23T10:00:00.000Z) or epoch milliseconds"
    )


def _int_value(strategy: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"value: the {strategy} strategy needs an integer value, got {value!r}")
    return value


def _chosen_partitions(
    admin: Any,
    committed: dict[tuple[str, int], int],
    topics: list[str] | None,
    partitions: list[tuple[str, int]] | None,
) -> list[tuple[str, int]]:
    if not topics and not partitions:
        return sorted(committed)
    metadata = admin.list_topics(timeout=ADMIN_TIMEOUT_S)
    chosen: set[tuple[str, int]] = set()
    for topic in topics or []:
        info = metadata.topics.get(topic)
        if info is None or info.error is not None:
            raise Unprocessable(f"topic {topic!r} does not exist")
        chosen.update((topic, p) for p in info.partitions)
    for topic, partition in partitions or []:
        info = metadata.topics.get(topic)
        if info is None or info.error is not None:
            raise Unprocessable(f"topic {topic!r} does not exist")
        if partition not in info.partitions:
            raise Unprocessable(f"topic {topic!r} has no partition {partition}")
        chosen.add((topic, partition))
    return sorted(chosen)


def group_offsets_reset(
    *,
    group: str,
    strategy: str,
    value: Any = None,
    topics: list[str] | None = None,
    partitions: list[tuple[str, int]] | None = None,
    dry_run: bool = True,
) -> list[OffsetResetRow]:
    """The new offset of each chosen partition, written unless ``dry_run``."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    if strategy not in RESET_STRATEGIES:
        raise BadRequest(f"strategy {strategy!r} is not one of {', '.join(RESET_STRATEGIES)}")
    # Check the value before asking the cluster anything.
    amount = 0
    if strategy in ("offset", "shift"):
        amount = _int_value(strategy, value)
    elif strategy == "datetime":
        stamp = parse_datetime(value)
    elif strategy == "by-duration":
        stamp = int(time.time() * 1000) - int(parse_duration(value).total_seconds() * 1000)
    admin = gateway().admin()
    state = _group_state(admin, group)
    committed = group_committed_offsets(admin=admin, group=group)
    if state == "Dead" and not committed and not topics and not partitions:
        raise NotFound(f"consumer group {group!r} does not exist")
    if not dry_run and state not in INACTIVE_STATES:
        raise Conflict(
            f"Assignments can only be reset if the group '{group}' is inactive, but the "
            f"current state is {state}."
        )
    chosen = _chosen_partitions(admin, committed, topics, partitions)
    earliest = partition_offsets(admin=admin, partitions=chosen, spec=OffsetSpec.earliest())
    latest = partition_offsets(admin=admin, partitions=chosen, spec=OffsetSpec.latest())
    by_time = (
        partition_offsets(admin=admin, partitions=chosen, spec=OffsetSpec.for_timestamp(stamp))
        if strategy in ("datetime", "by-duration")
        else {}
    )
    rows = []
    for key in chosen:
        current = committed.get(key)
        offset = reset_target(
            strategy,
            low=earliest[key],
            high=latest[key],
            current=current,
            amount=amount,
            found=by_time.get(key),
        )
        rows.append(OffsetResetRow(key[0], key[1], current, offset))
    if dry_run or not rows:
        return rows
    group_offsets_commit(
        admin,
        group,
        [TopicPartition(r.topic, r.partition, r.new_offset) for r in rows],
        failure=f"resetting offsets of group '{group}'",
    )
    return rows


def group_offsets_commit(admin: Any, group: str, offsets: list[Any], *, failure: str) -> None:
    """Commit ``offsets`` for ``group`` (AlterConsumerGroupOffsets); ``Conflict`` starting with
    ``failure`` when any partition is refused (e.g. the group has members)."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = ConsumerGroupTopicPartitions(group, offsets)
    result = admin_result(
        admin.alter_consumer_group_offsets([request], request_timeout=ADMIN_TIMEOUT_S)[group],
        group=group,
    )
    failed = [tp for tp in result.topic_partitions if tp.error is not None]
    if failed:
        first = failed[0].error
        raise Conflict(
            f"{failure} failed for {len(failed)} partition(s): {first.name()}: {first.str()}"
        )


# forced rebalance ------------------------------------------------------------------------------


def group_rebalance_send(*, group: str, timeout_s: float = 10.0) -> ErrorCode:
    """Ask the group's coordinator to rebalance it now; its answer as a Kafka error
    (COORDINATOR_NOT_AVAILABLE when no broker answered within ``timeout_s``)."""
    gw = gateway()
    try:
        return force_group_rebalance(
            gw.commands(timeout_s=timeout_s), group_id=group, broker_ids=list(gw.image().brokers)
        )
    except (redis.RedisError, OSError) as exc:
        raise KafkaUnavailable(f"metadata store unavailable: {exc}") from None


def group_force_rebalance(*, group: str) -> str:
    """Make a live group rebalance now; its state before. 404 unknown, 409 empty."""
    state = _group_state(gateway().admin(), group)
    if state == "Dead":
        raise NotFound(f"consumer group {group!r} does not exist")
    if state == "Empty":
        raise Conflict(f"consumer group {group!r} has no members to rebalance")
    error = group_rebalance_send(group=group)
    if error is ErrorCode.none:
        return state
    if error is ErrorCode.group_id_not_found:
        raise NotFound(f"consumer group {group!r} does not exist")
    if error is ErrorCode.coordinator_not_available:
        raise KafkaUnavailable(f"no coordinator answered for group {group!r}; retry shortly")
    raise Conflict(f"rebalancing group {group!r} failed: {error.name.upper()}")
