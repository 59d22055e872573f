"""Topic and config administration: the services behind the admin APIs.

Validation follows Kafka's ``ZkAdminManager``/``ControllerApis`` order: name, duplicate,
partition count, replication factor (never above the live brokers), manual assignments,
configs. The write itself is one fenced metadata-log append (``MetadataStore``); the call
then waits, up to the request's timeout, until this broker's own image shows the change, so
a client that reads Metadata right after sees its topic.

``TopicAdmin`` takes the parts it needs -- the metadata view, the metadata store, the
controller lease (writes carry its epoch) and the controller channel (a broker that is not
the controller forwards config changes and auto-creations) -- never the broker.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.config import (
    InvalidConfigError,
    describe_broker_config,
    describe_topic_config,
    validate_broker_dynamic_configs,
    validate_topic_configs,
)
from weir.metadata.errors import MetadataError
from weir.metadata.placement import assign_new_partitions, assign_replicas
from weir.topic_names import (
    UNDELETABLE_TOPICS,
    InvalidTopicName,
    collides,
    validate_topic_name,
)

if TYPE_CHECKING:
    from weir.controller_channel import ControllerChannel
    from weir.controller_lease import ControllerLease
    from weir.metadata.store import MetadataStore
    from weir.metadata_view import MetadataView, TopicView

log = logging.getLogger("weir.admin")

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

OP_SET = 0
OP_DELETE = 1
OP_APPEND = 2
OP_SUBTRACT = 3

_NULL_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class TopicOutcome:
    """Result of a topic-level admin operation, ready for any response version."""

    error: ErrorCode
    message: str | None = None
    name: str | None = None
    topic_id: uuid.UUID = _NULL_UUID
    num_partitions: int = -1
    replication_factor: int = -1
    configs: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class ConfigsOutcome:
    error: ErrorCode
    message: str | None = None
    entries: tuple[Any, ...] = field(default_factory=tuple)


def _fail(error: ErrorCode, message: str) -> TopicOutcome:
    return TopicOutcome(error=error, message=message)


def _too_few_brokers(replication_factor: int, live: int) -> TopicOutcome:
    """Placing replicas (new topic or new partitions) needs as many live brokers."""
    return _fail(
        ErrorCode.invalid_replication_factor,
        f"Replication factor: {replication_factor} larger than available brokers: {live}.",
    )


def _check_assignments(assignments: dict[int, list[int]], live: set[int]) -> str | None:
    if sorted(assignments) != list(range(len(assignments))):
        return "Partitions should be a consecutive 0-based integer sequence"
    sizes = {len(replicas) for replicas in assignments.values()}
    if len(sizes) != 1:
        return "All partitions should have the same number of replicas"
    for index, replicas in assignments.items():
        if not replicas:
            return f"Partition {index} has no replicas"
        if len(set(replicas)) != len(replicas):
            return f"Duplicate brokers not allowed in replica assignment: {replicas}"
        unknown = [r for r in replicas if r not in live]
        if unknown:
            return f"Unknown or offline brokers {unknown} in the assignment of partition {index}"
    return None


@dataclass(eq=False, repr=False, kw_only=True)
class TopicAdmin:
    """Topic and config changes, as the admin APIs, auto-creation and the group
    coordinator ask for them; metadata writes only while this broker holds the controller
    lease (config changes are forwarded to the controller otherwise)."""

    view: MetadataView
    store: MetadataStore
    lease: ControllerLease
    channel: ControllerChannel

    @property
    def is_controller(self) -> bool:
        """Does this broker hold the controller lease (so topic changes are made here)?"""
        return self.lease.is_controller

    async def auto_create_topic(
        self,
        name: str,
        *,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: dict[str, str] | None = None,
    ) -> tuple[ErrorCode, TopicView | None]:
        """Create ``name`` (broker defaults unless given): Metadata auto-creation, and the
        internal ``__consumer_offsets`` on first FindCoordinator.

        The controller creates it; any other broker asks the controller with CreateTopics,
        as Kafka's AutoTopicCreationManager does.
        """
        if self.is_controller:
            outcome = await self.create_topic(
                name=name,
                num_partitions=num_partitions,
                replication_factor=replication_factor,
                assignments={},
                configs=dict(configs or {}),
                validate_only=False,
                timeout_ms=5000,
            )
            error = outcome.error
        else:
            error = await self.channel.create_topic(
                name, num_partitions, replication_factor, configs or {}
            )
        if error not in (ErrorCode.none, ErrorCode.topic_already_exists):
            return error, None
        await self.view.wait_for_metadata(lambda: name in self.view.topic_views(), 5.0)
        view = self.view.topic_views().get(name)
        if view is None:
            return ErrorCode.leader_not_available, None
        return ErrorCode.none, view

    async def create_topic(
        self,
        *,
        name: str,
        num_partitions: int,
        replication_factor: int,
        assignments: dict[int, list[int]],
        configs: dict[str, str | None],
        validate_only: bool,
        timeout_ms: int,
    ) -> TopicOutcome:
        """Validate and create one topic (the caller checked that this broker is controller)."""
        try:
            validate_topic_name(name)
        except InvalidTopicName as exc:
            return _fail(ErrorCode.invalid_topic_exception, str(exc))
        existing = self.view.topic_views()
        if name in existing:
            return _fail(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        for other in existing:
            if collides(name, other):
                return _fail(
                    ErrorCode.invalid_topic_exception,
                    f"Topic '{name}' collides with existing topic: {other}",
                )
        live = await self.view.fresh_live_brokers()
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                return _fail(
                    ErrorCode.invalid_request,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time.",
                )
            error = _check_assignments(assignments, {b.broker_id for b in live})
            if error:
                return _fail(ErrorCode.invalid_replica_assignment, error)
            placement = [assignments[i] for i in range(len(assignments))]
        else:
            if num_partitions == -1:
                num_partitions = int(self.view.config.get("num.partitions"))
            if replication_factor == -1:
                replication_factor = int(self.view.config.get("default.replication.factor"))
            if num_partitions < 1:
                return _fail(
                    ErrorCode.invalid_partitions, "Number of partitions must be larger than 0."
                )
            if replication_factor < 1:
                return _fail(
                    ErrorCode.invalid_replication_factor,
                    "Replication factor must be larger than 0.",
                )
            if replication_factor > len(live):
                return _too_few_brokers(replication_factor, len(live))
            placement = assign_replicas(
                partitions=num_partitions,
                replication_factor=replication_factor,
                brokers=[(b.broker_id, b.rack) for b in live],
            )
        try:
            clean_configs = validate_topic_configs(configs, broker=self.view.config)
        except InvalidConfigError as exc:
            return _fail(ErrorCode(exc.error_code), exc.message)
        described = tuple(describe_topic_config(self.view.config, clean_configs, keys=None))
        if validate_only:
            return TopicOutcome(
                error=ErrorCode.none,
                name=name,
                num_partitions=len(placement),
                replication_factor=len(placement[0]),
                configs=described,
            )
        assert self.store is not None and self.lease.epoch is not None
        try:
            topic_id = await self.store.create_topic(
                controller_epoch=self.lease.epoch,
                name=name,
                assignments=placement,
                configs=clean_configs,
                live_brokers=[b.broker_id for b in live],
            )
        except MetadataError as exc:
            return _fail(ErrorCode(exc.error_code), str(exc))
        await self.view.wait_for_metadata(
            lambda: name in self.view.topic_views(), timeout_ms / 1000
        )
        log.info(
            "created topic %s with %d partitions x %d replicas",
            name,
            len(placement),
            len(placement[0]),
        )
        return TopicOutcome(
            error=ErrorCode.none,
            name=name,
            topic_id=uuid.UUID(str(topic_id)),
            num_partitions=len(placement),
            replication_factor=len(placement[0]),
            configs=described,
        )

    async def delete_topic(
        self, *, name: str | None, topic_id: uuid.UUID | None, timeout_ms: int
    ) -> TopicOutcome:
        views = self.view.topic_views()
        view = views.get(name) if name else None
        if view is None and topic_id is not None and topic_id != _NULL_UUID:
            view = self.view.topic_view_by_id(topic_id)
            if view is None:
                return TopicOutcome(ErrorCode.unknown_topic_id, "Topic id not found", name=name)
        if view is None:
            return TopicOutcome(
                ErrorCode.unknown_topic_or_partition,
                "This server does not host this topic-partition.",
                name=name,
            )
        if not self.view.config.get("delete.topic.enable"):
            return TopicOutcome(
                ErrorCode.topic_deletion_disabled, "Topic deletion is disabled.", name=view.name
            )
        if view.name in UNDELETABLE_TOPICS:
            return TopicOutcome(
                ErrorCode.invalid_request,
                f"Topic {view.name} is internal to the schema registry and cannot be deleted.",
                name=view.name,
            )
        assert self.store is not None and self.lease.epoch is not None
        try:
            await self.store.delete_topic(
                controller_epoch=self.lease.epoch, name=view.name, topic_id=view.topic_id
            )
        except MetadataError as exc:
            return TopicOutcome(ErrorCode(exc.error_code), str(exc), name=view.name)
        await self.view.wait_for_metadata(
            lambda: view.name not in self.view.topic_views(), timeout_ms / 1000
        )
        log.info("deleted topic %s", view.name)
        return TopicOutcome(ErrorCode.none, None, name=view.name, topic_id=view.topic_id)

    async def create_partitions(
        self,
        *,
        name: str,
        count: int,
        assignments: list[list[int]] | None,
        validate_only: bool,
        timeout_ms: int,
    ) -> TopicOutcome:
        view = self.view.topic_views().get(name)
        if view is None:
            return _fail(
                ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist."
            )
        current = len(view.partitions)
        if count == current:
            return _fail(ErrorCode.invalid_partitions, f"Topic already has {current} partition(s).")
        if count < current:
            return _fail(
                ErrorCode.invalid_partitions,
                f"The topic {name} currently has {current} partition(s); {count} would not be an "
                "increase.",
            )
        adding = count - current
        replication_factor = len(view.partitions[0].replicas)
        live = await self.view.fresh_live_brokers()
        if assignments is not None:
            if len(assignments) != adding:
                return _fail(
                    ErrorCode.invalid_replica_assignment,
                    f"Increasing the number of partitions by {adding} but {len(assignments)} "
                    "assignments provided.",
                )
            numbered = {current + i: a for i, a in enumerate(assignments)}
            for index, replicas in numbered.items():
                if len(replicas) != replication_factor:
                    return _fail(
                        ErrorCode.invalid_replica_assignment,
                        f"Inconsistent replication factor between partitions, partition {index} "
                        f"has {len(replicas)} while partitions [0] have replication factors "
                        f"[{replication_factor}], respectively.",
                    )
            error = _check_assignments(
                {i - current: r for i, r in numbered.items()}, {b.broker_id for b in live}
            )
            if error:
                return _fail(ErrorCode.invalid_replica_assignment, error)
            new_assignments = [list(a) for a in assignments]
        else:
            if replication_factor > len(live):
                return _too_few_brokers(replication_factor, len(live))
            new_assignments = assign_new_partitions(
                existing=[list(p.replicas) for p in view.partitions],
                count=adding,
                brokers=[(b.broker_id, b.rack) for b in live],
            )
        if validate_only:
            return TopicOutcome(ErrorCode.none, name=name)
        assert self.store is not None and self.lease.epoch is not None
        try:
            await self.store.create_partitions(
                controller_epoch=self.lease.epoch,
                name=name,
                assignments=new_assignments,
                live_brokers=[b.broker_id for b in live],
            )
        except MetadataError as exc:
            return _fail(ErrorCode(exc.error_code), str(exc))
        await self.view.wait_for_metadata(
            lambda: (
                len(self.view.topic_views()[name].partitions) >= count
                if name in self.view.topic_views()
                else True
            ),
            timeout_ms / 1000,
        )
        return TopicOutcome(ErrorCode.none, name=name)

    def describe_configs(
        self, *, resource_type: int, resource_name: str, keys: list[str] | None
    ) -> ConfigsOutcome:
        if resource_type == RESOURCE_TOPIC:
            if resource_name not in self.view.topic_views():
                return ConfigsOutcome(
                    ErrorCode.unknown_topic_or_partition,
                    f"Topic {resource_name} does not exist",
                )
            entries = describe_topic_config(
                self.view.config, self.view.topic_overrides(resource_name), keys=keys
            )
            return ConfigsOutcome(ErrorCode.none, None, tuple(entries))
        if resource_type == RESOURCE_BROKER:
            if resource_name not in ("", str(self.view.broker_id)):
                return ConfigsOutcome(
                    ErrorCode.invalid_request,
                    f"Unexpected broker id, expected {self.view.broker_id} or empty string, "
                    f"but received {resource_name}",
                )
            entries = describe_broker_config(self.view.config, keys=keys)
            return ConfigsOutcome(ErrorCode.none, None, tuple(entries))
        return ConfigsOutcome(
            ErrorCode.invalid_request, f"Unsupported resource type {resource_type}"
        )

    async def alter_configs(
        self,
        *,
        resource_type: int,
        resource_name: str,
        operations: list[tuple[str, int, str | None]],
        replace: bool,
        validate_only: bool,
    ) -> ConfigsOutcome:
        """Apply SET/DELETE/APPEND/SUBTRACT (or, with ``replace``, the whole set) to a resource."""
        assert self.store is not None
        names = [name for name, _, _ in operations]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            return ConfigsOutcome(
                ErrorCode.invalid_request,
                f"Error due to duplicate config keys: {', '.join(sorted(duplicates))}",
            )
        if resource_type == RESOURCE_TOPIC:
            if resource_name not in self.view.topic_views():
                return ConfigsOutcome(
                    ErrorCode.unknown_topic_or_partition, f"Topic {resource_name} does not exist"
                )
            current = {} if replace else self.view.topic_overrides(resource_name)

            def validator(values: dict[str, str | None]) -> dict[str, str]:
                return validate_topic_configs(values, broker=self.view.config)

            scope = ("topic", resource_name)
        elif resource_type == RESOURCE_BROKER:
            if resource_name not in ("", str(self.view.broker_id)) and not resource_name.isdigit():
                return ConfigsOutcome(
                    ErrorCode.invalid_request, f"Invalid broker id {resource_name!r}"
                )
            current = {} if replace else self.view.broker_dynamic_overrides(resource_name)

            def validator(values: dict[str, str | None]) -> dict[str, str]:
                return validate_broker_dynamic_configs(values, per_broker=resource_name != "")

            scope = ("broker", resource_name)
        else:
            return ConfigsOutcome(
                ErrorCode.invalid_request, f"Unsupported resource type {resource_type}"
            )
        try:
            updated = _apply_operations(current, operations, self.view, scope)
            clean = validator(updated)
        except InvalidConfigError as exc:
            return ConfigsOutcome(ErrorCode(exc.error_code), exc.message)
        if validate_only:
            return ConfigsOutcome(ErrorCode.none)
        if self.lease.is_controller:
            assert self.lease.epoch is not None
            try:
                await self.store.replace_configs(
                    controller_epoch=self.lease.epoch,
                    resource_type=scope[0],
                    resource_name=scope[1],
                    configs=clean,
                )
            except MetadataError as exc:
                return ConfigsOutcome(ErrorCode(exc.error_code), str(exc))
        else:
            # Metadata writes are the controller's: forward the change (KIP-590's idea).
            previous = self.view.current_overrides(scope)
            changes = [(k, OP_SET, v) for k, v in clean.items() if previous.get(k) != v]
            changes += [(k, OP_DELETE, None) for k in previous if k not in clean]
            error, message = await self.channel.alter_configs(resource_type, resource_name, changes)
            if error is not ErrorCode.none:
                return ConfigsOutcome(error, message)
        await self.view.wait_for_metadata(lambda: self.view.current_overrides(scope) == clean, 5.0)
        return ConfigsOutcome(ErrorCode.none)


def _apply_operations(
    current: dict[str, str],
    operations: list[tuple[str, int, str | None]],
    view: MetadataView,
    scope: tuple[str, str],
) -> dict[str, str | None]:
    result: dict[str, str | None] = dict(current)
    for name, op, value in operations:
        if op == OP_SET:
            result[name] = value
        elif op == OP_DELETE:
            result.pop(name, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            base = result.get(name)
            if base is None:
                base = view.effective_config_value(scope, name) or ""
            items = [v for v in base.split(",") if v]
            extra = [v for v in (value or "").split(",") if v]
            if op == OP_APPEND:
                items += [v for v in extra if v not in items]
            else:
                items = [v for v in items if v not in extra]
            result[name] = ",".join(items)
        else:
            raise InvalidConfigError(name, f"Unknown config operation {op} for {name}")
    return result
