"""``manage.py consumer-groups``: ``kafka-consumer-groups.sh`` parity.

    manage.py consumer-groups --list
    manage.py consumer-groups --describe (--group G | --all-groups) [--members | --state]
    manage.py consumer-groups --reset-offsets (--group G | --all-groups) \\
        (--topic T[:0,1] | --all-topics) \\
        (--to-earliest | --to-latest | --to-offset N | --shift-by N \\
         | --to-datetime 2026-11-23T10:00:00.000) [--dry-run | --execute]
    manage.py consumer-groups --delete (--group G [--group G2 ...] | --all-groups)
    manage.py consumer-groups --delete-offsets --group G --topic T[:0,1]
    manage.py consumer-groups --force-rebalance --group G

Everything goes over the Kafka protocol (confluent-kafka's AdminClient, and Weir's kio client
for OffsetDelete), except ``--force-rebalance``, which Kafka has no request for: it is sent to
the group's coordinator over the broker command channel (``weir.commands``), so it needs
``WEIR_REDIS_URL`` and ``WEIR_CLUSTER_ID`` like the brokers. The reads and the rebalance are
the ones the REST API uses (``groups.selectors``, ``groups.services``); this module parses
flags and prints what ``kafka-consumer-groups.sh`` prints.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from kio.schema.errors import ErrorCode

from brokers.management.kafka_admin import (
    add_tool_arguments,
    admin_client,
    api_errors,
    tool_target,
)
from groups.selectors import (
    group_committed_offsets,
    group_description,
    kafka_state,
    partition_offsets,
)
from groups.services import group_rebalance_send
from weir.coordinator.offset_reset import reset_target

ACTIONS = ("list", "describe", "reset_offsets", "delete", "delete_offsets", "force_rebalance")
RESETS = ("to_earliest", "to_latest", "to_offset", "shift_by", "to_datetime")
# The reset option → the strategy name of weir.coordinator.offset_reset.
RESET_STRATEGY = {
    "to_earliest": "earliest",
    "to_latest": "latest",
    "to_offset": "offset",
    "shift_by": "shift",
    "to_datetime": "datetime",
}
INACTIVE = {"Empty", "Dead"}
# Which action each option belongs to (kafka-consumer-groups refuses the others the same way).
ALLOWED_WITH = {
    "members": ("describe",),
    "state": ("describe",),
    "all_topics": ("reset_offsets",),
    "dry_run": ("reset_offsets",),
    "execute": ("reset_offsets",),
    **{reset: ("reset_offsets",) for reset in RESETS},
    "topic": ("reset_offsets", "delete_offsets"),
    "all_groups": ("describe", "reset_offsets", "delete"),
    "group": ("describe", "reset_offsets", "delete", "delete_offsets", "force_rebalance"),
}


def _given(value: Any) -> bool:
    """Was the option given? (``--to-offset 0`` is, although ``0 == False``.)"""
    return value is not None and value is not False and value != []


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def check_options(options: dict[str, Any]) -> None:
    """Refuse options that do not go with the chosen action, naming them (CommandError)."""
    action = next(a for a in ACTIONS if options.get(a))
    for option, actions in ALLOWED_WITH.items():
        if not _given(options.get(option)) or action in actions:
            continue
        wanted = ", ".join(_flag(a) for a in actions)
        raise CommandError(f"Option {_flag(option)} takes one of these options: {wanted}")
    if options.get("members") and options.get("state"):
        raise CommandError("Option --members can't be used with option --state")
    if options.get("group") and options.get("all_groups"):
        raise CommandError("Option --group can't be used with option --all-groups")
    if action in ("delete_offsets", "force_rebalance") and len(options.get("group", [])) > 1:
        raise CommandError(f"Option {_flag(action)} takes exactly one --group")


class Command(BaseCommand):
    help = (
        "List, describe, reset, delete and rebalance consumer groups "
        "(kafka-consumer-groups parity)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_tool_arguments(
            parser,
            [
                "--list",
                "--describe",
                "--reset-offsets",
                "--delete",
                "--delete-offsets",
                "--force-rebalance",
            ],
        )
        parser.add_argument("--group", action="append", default=[])
        parser.add_argument("--all-groups", action="store_true")
        parser.add_argument("--members", action="store_true")
        parser.add_argument("--state", action="store_true")
        parser.add_argument("--topic", action="append", default=[], help="T or T:0,1,2")
        parser.add_argument("--all-topics", action="store_true")
        resets = parser.add_mutually_exclusive_group()
        resets.add_argument("--to-earliest", action="store_true")
        resets.add_argument("--to-latest", action="store_true")
        resets.add_argument("--to-offset", type=int)
        resets.add_argument("--shift-by", type=int)
        resets.add_argument("--to-datetime", help="YYYY-MM-DDTHH:mm:SS.sss (UTC)")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--dry-run", action="store_true")
        mode.add_argument("--execute", action="store_true")
        parser.add_argument("--timeout", type=float, default=30.0)

    def handle(self, *args: Any, **options: Any) -> None:
        check_options(options)
        self.options = options
        self.timeout = options["timeout"]
        self.target = tool_target(options)
        self.admin = admin_client(self.target)
        if options["list"]:
            self._list()
            return
        groups = options["group"]
        if options["all_groups"]:
            groups = self._group_ids()
            if not groups:
                self.stdout.write("There are no consumer groups.")
                return
        if not groups:
            raise CommandError("--group is required for this action")
        if options["describe"]:
            for group in groups:
                self._describe(group)
        elif options["reset_offsets"]:
            failed = []
            for group in groups:
                try:
                    self._reset(group)
                except CommandError as exc:
                    if len(groups) == 1:
                        raise
                    # --all-groups: an active group is reported, the others still reset.
                    self.stderr.write(f"Error: {exc}")
                    failed.append(group)
            if failed:
                raise CommandError(f"offsets of {len(failed)} group(s) were not reset")
        elif options["delete"]:
            self._delete(groups)
        elif options["delete_offsets"]:
            self._delete_offsets(groups[0])
        else:
            self._force_rebalance(groups[0])

    # helpers -------------------------------------------------------------------------------
    def _result(self, future: Any) -> Any:
        from confluent_kafka import KafkaException

        try:
            return future.result(self.timeout)
        except KafkaException as exc:
            error = exc.args[0]
            raise CommandError(f"{error.name()}: {error.str()}") from None

    def _group_ids(self) -> list[str]:
        listing = self._result(self.admin.list_consumer_groups(request_timeout=self.timeout))
        return sorted(g.group_id for g in listing.valid)

    def _description(self, group: str) -> Any:
        with api_errors():
            return group_description(admin=self.admin, group=group, timeout_s=self.timeout)

    def _committed(self, group: str) -> dict[tuple[str, int], int]:
        with api_errors():
            return group_committed_offsets(admin=self.admin, group=group, timeout_s=self.timeout)

    def _offsets(self, partitions: list[tuple[str, int]], spec: Any) -> dict[tuple[str, int], int]:
        with api_errors():
            return partition_offsets(
                admin=self.admin, partitions=partitions, spec=spec, timeout_s=self.timeout
            )

    def _latest(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        from confluent_kafka.admin import OffsetSpec

        return self._offsets(partitions, OffsetSpec.latest())

    # --list --------------------------------------------------------------------------------
    def _list(self) -> None:
        for group in self._group_ids():
            self.stdout.write(group)

    # --describe ----------------------------------------------------------------------------
    def _describe(self, group: str) -> None:
        description = self._description(group)
        state = kafka_state(description)
        members = list(description.members)
        if self.options["state"]:
            coordinator = description.coordinator
            self._table(
                ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
                [
                    [
                        group,
                        f"{coordinator.host}:{coordinator.port} ({coordinator.id})",
                        description.partition_assignor or "",
                        state,
                        str(len(members)),
                    ]
                ],
            )
            return
        if self.options["members"]:
            self._table(
                ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
                [
                    [
                        group,
                        m.member_id,
                        m.host,
                        m.client_id,
                        str(len(m.assignment.topic_partitions) if m.assignment else 0),
                    ]
                    for m in members
                ],
            )
            return
        owners: dict[tuple[str, int], Any] = {}
        for member in members:
            for tp in member.assignment.topic_partitions if member.assignment else []:
                owners[(tp.topic, tp.partition)] = member
        committed = self._committed(group)
        partitions = sorted(set(committed) | set(owners))
        if state == "Dead" and not partitions:
            raise CommandError(f"Consumer group '{group}' does not exist.")
        if not members:
            self.stdout.write(f"\nConsumer group '{group}' has no active members.")
        latest = self._latest(partitions)
        rows = []
        for key in partitions:
            current = committed.get(key, -1)
            end = latest.get(key, -1)
            owner = owners.get(key)
            rows.append(
                [
                    group,
                    key[0],
                    str(key[1]),
                    str(current) if current >= 0 else "-",
                    str(end) if end >= 0 else "-",
                    str(max(end - current, 0)) if current >= 0 and end >= 0 else "-",
                    owner.member_id if owner else "-",
                    owner.host if owner else "-",
                    owner.client_id if owner else "-",
                ]
            )
        self._table(
            [
                "GROUP",
                "TOPIC",
                "PARTITION",
                "CURRENT-OFFSET",
                "LOG-END-OFFSET",
                "LAG",
                "CONSUMER-ID",
                "HOST",
                "CLIENT-ID",
            ],
            rows,
        )

    def _table(self, header: list[str], rows: list[list[str]]) -> None:
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
        self.stdout.write("")
        for row in [header, *rows]:
            self.stdout.write(
                " ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
            )

    # --reset-offsets -----------------------------------------------------------------------
    def _reset(self, group: str) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        chosen = [r for r in RESETS if _given(self.options[r])]
        if len(chosen) != 1:
            raise CommandError(
                "--reset-offsets needs exactly one of --to-earliest, --to-latest, "
                "--to-offset, --shift-by, --to-datetime"
            )
        if not self.options["topic"] and not self.options["all_topics"]:
            raise CommandError("--reset-offsets needs --topic or --all-topics")
        state = kafka_state(self._description(group))
        if state not in INACTIVE:
            raise CommandError(
                f"Assignments can only be reset if the group '{group}' is inactive, but the "
                f"current state is {state}."
            )
        committed = self._committed(group)
        partitions = self._partitions(committed)
        earliest = self._offsets(partitions, OffsetSpec.earliest())
        latest = self._latest(partitions)
        how = chosen[0]
        by_time: dict[tuple[str, int], int] = {}
        if how == "to_datetime":
            stamp = _parse_datetime(self.options["to_datetime"])
            by_time = self._offsets(partitions, OffsetSpec.for_timestamp(stamp))
        targets: dict[tuple[str, int], int] = {}
        strategy = RESET_STRATEGY[how]
        amount = self.options["to_offset"] if how == "to_offset" else self.options["shift_by"]
        for key in partitions:
            current = committed.get(key, -1)
            targets[key] = reset_target(
                strategy,
                low=earliest[key],
                high=latest[key],
                current=current if current >= 0 else None,
                amount=amount or 0,
                found=by_time.get(key),
            )
        rows = [[group, t, str(p), str(o)] for (t, p), o in sorted(targets.items())]
        self._table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], rows)
        if not self.options["execute"]:
            if not self.options["dry_run"]:
                self.stdout.write(
                    "\nWARN: No action will be performed as the --execute option is missing. "
                    "Add --execute to reset the offsets."
                )
            return
        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(t, p, o) for (t, p), o in sorted(targets.items())]
        )
        result = self._result(
            self.admin.alter_consumer_group_offsets([request], request_timeout=self.timeout)[group]
        )
        failed = [tp for tp in result.topic_partitions if tp.error is not None]
        if failed:
            raise CommandError(f"resetting offsets failed: {failed}")

    def _partitions(self, committed: dict[tuple[str, int], int]) -> list[tuple[str, int]]:
        if self.options["all_topics"]:
            return sorted(committed)
        metadata = self.admin.list_topics(timeout=self.timeout)
        chosen: list[tuple[str, int]] = []
        for spec in self.options["topic"]:
            topic, _, numbers = spec.partition(":")
            info = metadata.topics.get(topic)
            if info is None or info.error is not None:
                raise CommandError(f"--topic {spec}: topic {topic} does not exist")
            if numbers:
                try:
                    wanted = [int(n) for n in numbers.split(",")]
                except ValueError:
                    raise CommandError(f"--topic {spec}: partitions must be numbers") from None
                missing = [n for n in wanted if n not in info.partitions]
                if missing:
                    raise CommandError(f"--topic {spec}: no partition(s) {missing}")
            else:
                wanted = sorted(info.partitions)
            chosen += [(topic, n) for n in wanted]
        return chosen

    # --delete / --delete-offsets -------------------------------------------------------------
    def _delete(self, groups: list[str]) -> None:
        futures = self.admin.delete_consumer_groups(groups, request_timeout=self.timeout)
        failures = []
        for group, future in futures.items():
            try:
                self._result(future)
            except CommandError as exc:
                failures.append(f"{group}: {exc}")
        if failures:
            raise CommandError("Deletion of some consumer groups failed:\n" + "\n".join(failures))
        names = ", ".join(f"'{g}'" for g in groups)
        self.stdout.write(f"Deletion of requested consumer groups ({names}) was successful.")

    def _delete_offsets(self, group: str) -> None:
        from kio.schema.offset_delete.v0.request import (
            OffsetDeleteRequest,
            OffsetDeleteRequestPartition,
            OffsetDeleteRequestTopic,
        )

        from brokers.management.protocol_admin import send_to_coordinator

        if not self.options["topic"]:
            raise CommandError("--delete-offsets needs --topic")
        partitions = self._partitions(self._committed(group))
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        request = OffsetDeleteRequest(
            group_id=group,
            topics=tuple(
                OffsetDeleteRequestTopic(
                    name=topic,
                    partitions=tuple(
                        OffsetDeleteRequestPartition(partition_index=p) for p in parts
                    ),
                )
                for topic, parts in by_topic.items()
            ),
        )
        response = send_to_coordinator(self.target, group, request, timeout=self.timeout)
        if response.error_code != ErrorCode.none:
            raise CommandError(
                f"Encountered some issues while trying to delete offsets of group {group}: "
                f"{ErrorCode(response.error_code).name.upper()}"
            )
        rows = [
            [t.name, str(p.partition_index), _status(p.error_code)]
            for t in response.topics
            for p in t.partitions
        ]
        self.stdout.write(f"Request succeed for deleting offsets from group {group}.")
        self._table(["TOPIC", "PARTITION", "STATUS"], rows)

    # --force-rebalance -----------------------------------------------------------------------
    def _force_rebalance(self, group: str) -> None:
        with api_errors():
            error = group_rebalance_send(group=group, timeout_s=self.timeout)
        if error is not ErrorCode.none:
            raise CommandError(f"Rebalancing group {group} failed: {error.name.upper()}")
        self.stdout.write(f"Group {group} is rebalancing: its members rejoin now.")


def _status(code: int) -> str:
    return "Successful" if code == ErrorCode.none else f"Error: {ErrorCode(code).name.upper()}"


def _parse_datetime(text: str) -> int:
    """Kafka's ``--to-datetime`` format, ``YYYY-MM-DDTHH:mm:SS.sss`` (UTC unless zoned)."""
    for pattern in ("%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
        try:
            moment = datetime.strptime(text, pattern)
        except ValueError:
            continue
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)
    raise CommandError(f"--to-datetime {text!r}: expected YYYY-MM-DDTHH:mm:SS.sss")
