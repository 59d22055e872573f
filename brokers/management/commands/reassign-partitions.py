"""``manage.py reassign-partitions``: ``kafka-reassign-partitions.sh`` parity.

    manage.py reassign-partitions --generate --topics-to-move-json-file topics.json \\
        --broker-list 1,2,3
    manage.py reassign-partitions --execute --reassignment-json-file plan.json \\
        [--throttle 10000000]
    manage.py reassign-partitions --verify --reassignment-json-file plan.json
    manage.py reassign-partitions --cancel --reassignment-json-file plan.json
    manage.py reassign-partitions --list

Files use Kafka's JSON: ``{"version":1,"topics":[{"topic":"T"}]}`` to generate, and
``{"version":1,"partitions":[{"topic":"T","partition":0,"replicas":[1,2]}]}`` to execute.
``--throttle`` (bytes/s) limits the catch-up traffic of the moving replicas by setting
``leader.replication.throttled.rate`` on the brokers and the throttled-replica lists on the
topics, as Kafka's tool does; ``--verify`` removes them once every move has completed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from kio.schema.errors import ErrorCode
from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest

from brokers.management.kafka_admin import (
    ToolTarget,
    add_tool_arguments,
    admin_client,
    tool_target,
)
from brokers.management.protocol_admin import (
    ClusterInfo,
    cluster_info,
    request_timeout,
    send_to_controller,
)
from brokers.ops.planner import PartitionDiff
from brokers.ops.requests import alter_reassignments_request, reassignment_outcomes
from brokers.ops.throttle import (
    ThrottleError,
    alter_configs,
    clear_throttle_resources,
    throttle_resources,
)
from weir.metadata.placement import assign_replicas


def _load_json(path: str, flag: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise CommandError(f"{flag} {path}: {exc}") from None
    if not isinstance(data, dict):
        raise CommandError(f"{flag} {path}: expected a JSON object")
    return data


def parse_plan(path: str) -> list[tuple[str, int, list[int]]]:
    """``{"partitions":[{"topic","partition","replicas"}]}`` → [(topic, partition, replicas)]."""
    data = _load_json(path, "--reassignment-json-file")
    plan = []
    try:
        for item in data["partitions"]:
            replicas = [int(r) for r in item["replicas"]]
            plan.append((str(item["topic"]), int(item["partition"]), replicas))
    except (KeyError, TypeError, ValueError) as exc:
        raise CommandError(
            f"--reassignment-json-file {path}: each partition needs topic, partition and "
            f"replicas ({exc!r})"
        ) from None
    seen = set()
    for topic, partition, replicas in plan:
        if (topic, partition) in seen:
            raise CommandError(f"Partition {topic}-{partition} appears more than once")
        seen.add((topic, partition))
        if len(set(replicas)) != len(replicas):
            raise CommandError(f"Partition {topic}-{partition} lists a broker twice: {replicas}")
    return plan


def plan_json(partitions: list[tuple[str, int, list[int]]]) -> str:
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
                for t, p, r in sorted(partitions)
            ],
        },
        separators=(",", ":"),
    )


def _alter_configs(admin: Any, resources: list[Any]) -> None:
    try:
        alter_configs(admin, resources)
    except ThrottleError as exc:
        raise CommandError(str(exc)) from None


class Command(BaseCommand):
    help = "Move partition replicas between brokers (kafka-reassign-partitions.sh parity)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tool_arguments(parser, ["--generate", "--execute", "--verify", "--cancel", "--list"])
        parser.add_argument("--topics-to-move-json-file")
        parser.add_argument("--broker-list", help="comma-separated broker ids")
        parser.add_argument("--reassignment-json-file")
        parser.add_argument("--throttle", type=int, default=-1, help="bytes/s for moving replicas")
        parser.add_argument("--timeout", type=float, default=30.0)

    def handle(self, *args: Any, **options: Any) -> None:
        cluster = tool_target(options)
        if options["generate"]:
            self._generate(cluster, options)
        elif options["list"]:
            self._list(cluster)
        else:
            if not options["reassignment_json_file"]:
                raise CommandError("--reassignment-json-file is required for this action")
            plan = parse_plan(options["reassignment_json_file"])
            if options["execute"]:
                self._execute(cluster, plan, options)
            elif options["verify"]:
                self._verify(cluster, plan)
            else:
                self._cancel(cluster, plan)

    # --generate --------------------------------------------------------------------------
    def _generate(self, cluster: ToolTarget, options: dict[str, Any]) -> None:
        if not options["topics_to_move_json_file"] or not options["broker_list"]:
            raise CommandError("--generate needs --topics-to-move-json-file and --broker-list")
        data = _load_json(options["topics_to_move_json_file"], "--topics-to-move-json-file")
        try:
            topics = [str(t["topic"]) for t in data["topics"]]
            brokers = [int(b) for b in options["broker_list"].split(",") if b.strip()]
        except (KeyError, TypeError, ValueError) as exc:
            raise CommandError(f"bad --generate input: {exc!r}") from None
        info = cluster_info(cluster)
        unknown = [b for b in brokers if b not in info.brokers]
        if unknown:
            raise CommandError(f"--broker-list names brokers that are not live: {unknown}")
        current, proposed = [], []
        for topic in topics:
            partitions = info.topics.get(topic)
            if partitions is None:
                raise CommandError(f"Topic {topic} does not exist")
            rf = len(partitions[0])
            if rf > len(brokers):
                raise CommandError(
                    f"Replication factor {rf} of {topic} is larger than --broker-list"
                )
            new = assign_replicas(
                partitions=len(partitions),
                replication_factor=rf,
                brokers=[(b, None) for b in brokers],
            )
            for index in sorted(partitions):
                current.append((topic, index, partitions[index]))
                proposed.append((topic, index, new[index]))
        self.stdout.write("Current partition replica assignment")
        self.stdout.write(plan_json(current))
        self.stdout.write("")
        self.stdout.write("Proposed partition reassignment configuration")
        self.stdout.write(plan_json(proposed))

    # --execute ---------------------------------------------------------------------------
    def _execute(
        self, cluster: ToolTarget, plan: list[tuple[str, int, list[int]]], options: dict[str, Any]
    ) -> None:
        info = cluster_info(cluster)
        current = []
        for topic, partition, _ in plan:
            replicas = info.topics.get(topic, {}).get(partition)
            if replicas is None:
                raise CommandError(f"Partition {topic}-{partition} does not exist")
            current.append((topic, partition, replicas))
        self.stdout.write("Current partition replica assignment\n")
        self.stdout.write(plan_json(current))
        self.stdout.write(
            "\nSave this to use as the --reassignment-json-file option during rollback"
        )
        if options["throttle"] >= 0:
            self._set_throttles(cluster, info, plan, options["throttle"])
        self._alter(cluster, [(t, p, r) for t, p, r in plan], options["timeout"])
        names = ",".join(f"{t}-{p}" for t, p, _ in plan)
        self.stdout.write(f"Successfully started partition reassignments for {names}")

    def _alter(
        self, cluster: ToolTarget, plan: list[tuple[str, int, list[int] | None]], timeout: float
    ) -> None:
        response = send_to_controller(
            cluster, alter_reassignments_request(plan, timeout=request_timeout(timeout))
        )
        if response.error_code != ErrorCode.none:
            raise CommandError(
                f"Error reassigning partitions: {ErrorCode(response.error_code).name} "
                f"{response.error_message or ''}"
            )
        failures = [
            f"{t}-{p}: {error.lower()} {message or ''}"
            for (t, p), (error, message) in reassignment_outcomes(response).items()
            if error != "NONE"
        ]
        if failures:
            raise CommandError("Error reassigning partition(s):\n" + "\n".join(failures))

    def _set_throttles(
        self,
        cluster: ToolTarget,
        info: ClusterInfo,
        plan: list[tuple[str, int, list[int]]],
        rate: int,
    ) -> None:
        moves = [
            PartitionDiff(topic, partition, tuple(info.topics[topic][partition]), tuple(target))
            for topic, partition, target in plan
        ]
        resources = throttle_resources(moves, rate, live_brokers=info.brokers)
        _alter_configs(admin_client(cluster), resources)
        self.stdout.write(f"The inter-broker throttle limit was set to {rate} B/s")

    # --verify / --cancel / --list ----------------------------------------------------------
    def _ongoing(self, cluster: ToolTarget) -> dict[tuple[str, int], Any]:
        response = send_to_controller(
            cluster, ListPartitionReassignmentsRequest(timeout=request_timeout(30), topics=None)
        )
        if response.error_code != ErrorCode.none:
            raise CommandError(
                f"Error listing reassignments: {ErrorCode(response.error_code).name}"
            )
        return {(t.name, p.partition_index): p for t in response.topics for p in t.partitions}

    def _verify(self, cluster: ToolTarget, plan: list[tuple[str, int, list[int]]]) -> None:
        ongoing = self._ongoing(cluster)
        info = cluster_info(cluster)
        self.stdout.write("Status of partition reassignment:")
        all_done = True
        for topic, partition, target in plan:
            if (topic, partition) in ongoing:
                all_done = False
                self.stdout.write(
                    f"Reassignment of partition {topic}-{partition} is still in progress."
                )
            elif info.topics.get(topic, {}).get(partition) == target:
                self.stdout.write(f"Reassignment of partition {topic}-{partition} is completed.")
            else:
                all_done = False
                self.stdout.write(
                    f"There is no active reassignment of partition {topic}-{partition}, but "
                    f"replica set is {info.topics.get(topic, {}).get(partition)} rather than "
                    f"{target}."
                )
        if all_done:
            self._clear_throttles(cluster, info, {t for t, _, _ in plan})

    def _clear_throttles(self, cluster: ToolTarget, info: ClusterInfo, topics: set[str]) -> None:
        admin = admin_client(cluster)
        resources = clear_throttle_resources(brokers=info.brokers, topics=topics)
        _alter_configs(admin, resources)
        self.stdout.write(
            f"Clearing broker-level throttles on brokers {','.join(map(str, sorted(info.brokers)))}"
        )
        self.stdout.write(f"Clearing topic-level throttles on topics {','.join(sorted(topics))}")

    def _cancel(self, cluster: ToolTarget, plan: list[tuple[str, int, list[int]]]) -> None:
        ongoing = self._ongoing(cluster)
        targets: list[tuple[str, int, list[int] | None]] = [
            (t, p, None) for t, p, _ in plan if (t, p) in ongoing
        ]
        if targets:
            self._alter(cluster, targets, 30.0)
        names = ",".join(f"{t}-{p}" for t, p, _ in targets) or "(none were in progress)"
        self.stdout.write(f"Successfully cancelled partition reassignments for: {names}")

    def _list(self, cluster: ToolTarget) -> None:
        ongoing = self._ongoing(cluster)
        if not ongoing:
            self.stdout.write("No partition reassignments found.")
            return
        self.stdout.write("Current partition reassignments:")
        for (topic, partition), state in sorted(ongoing.items()):
            self.stdout.write(
                f"{topic}-{partition}: replicas: {list(state.replicas)}. adding: "
                f"{list(state.adding_replicas)}. removing: {list(state.removing_replicas)}."
            )
