"""``manage.py topics``: ``kafka-topics.sh`` parity over the Kafka protocol.

    manage.py topics --bootstrap-server HOST:PORT --create --topic T --partitions 3 \\
        --replication-factor 1 --config retention.ms=60000
    manage.py topics --list
    manage.py topics --describe [--topic T]
    manage.py topics --alter --topic T --partitions 6
    manage.py topics --delete --topic T

Theory of operation
-------------------
The command is a Kafka client of its ``--bootstrap-server`` (default ``WEIR_BOOTSTRAP_SERVERS``
or 127.0.0.1:9092), so it works against any broker of the cluster, and against Kafka itself.
It sends the requests :mod:`topics.services` builds for the REST API (CreateTopics,
CreatePartitions, DeleteTopics) and reads configs with the request ``manage.py configs`` and
the config views share; what is left here is kafka-topics' flags and output. Checks the REST
API makes first (a topic name, a partition count below the current one) are left to the
broker, whose Kafka error the tool prints as kafka-topics does.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest

from brokers.management.kafka_admin import (
    add_tool_arguments,
    kafka_error_text,
    parse_config_pairs,
    tool_target,
)
from brokers.management.protocol_admin import request_timeout, send_to_any_broker
from brokers.rest.configs import describe_configs_request
from topics.services import (
    NewTopic,
    topic_create_request,
    topic_delete_request,
    topic_partitions_request,
)

# Config sources kafka-topics --describe lists: the topic's own overrides.
_DYNAMIC_TOPIC_CONFIG = 1


class Command(BaseCommand):
    help = "Create, list, describe, alter and delete topics (kafka-topics.sh parity)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tool_arguments(
            parser,
            [
                ("--create", "create a topic"),
                ("--list", "list topic names"),
                ("--describe", "describe topics"),
                ("--alter", "add partitions to a topic"),
                ("--delete", "delete a topic"),
            ],
        )
        parser.add_argument("--topic", help="topic name")
        parser.add_argument("--partitions", type=int, help="number of partitions")
        parser.add_argument("--replication-factor", type=int, help="replicas per partition")
        parser.add_argument(
            "--config",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="topic config override (repeatable)",
        )
        parser.add_argument(
            "--if-not-exists",
            action="store_true",
            help="with --create: succeed if the topic exists",
        )
        parser.add_argument(
            "--if-exists",
            action="store_true",
            help="with --alter/--delete: succeed if the topic is missing",
        )
        parser.add_argument(
            "--exclude-internal",
            action="store_true",
            help="with --list/--describe: hide internal topics",
        )
        parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait")

    def handle(self, *args: Any, **options: Any) -> None:
        self.options = options
        self.target = tool_target(options)
        if options["create"]:
            self._create()
        elif options["list"]:
            for name in sorted(self._topics()):
                self.stdout.write(name)
        elif options["describe"]:
            self._describe()
        elif options["alter"]:
            self._alter()
        elif options["delete"]:
            self._delete()

    def _send(self, request: Any) -> Any:
        return send_to_any_broker(self.target, request, timeout=self.options["timeout"])

    def _check(self, result: Any, *, tolerated: ErrorCode | None = None) -> bool:
        """False for a tolerated error (``--if-exists``/``--if-not-exists``), else raise it."""
        if result.error_code == ErrorCode.none:
            return True
        if tolerated is not None and result.error_code == tolerated:
            return False
        text = kafka_error_text(result.error_code, result.error_message)
        raise CommandError(f"Error while executing topic command : {text}")

    def _require_topic(self) -> str:
        if not self.options["topic"]:
            raise CommandError("--topic is required for this action")
        return self.options["topic"]

    def _topics(self) -> dict[str, Any]:
        """name → Metadata topic, every topic (naming one could auto-create it)."""
        response = self._send(
            MetadataRequest(
                topics=None,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        topics = {t.name: t for t in response.topics}
        if self.options["exclude_internal"]:
            topics = {k: v for k, v in topics.items() if not k.startswith("__")}
        return topics

    def _create(self) -> None:
        topic = self._require_topic()
        options = self.options
        new = NewTopic(
            name=topic,
            partitions_count=options["partitions"],
            replication_factor=options["replication_factor"],
            configs=dict(parse_config_pairs(options["config"], flag="--config")),
        )
        request = topic_create_request(topic=new, timeout=request_timeout(options["timeout"]))
        (result,) = self._send(request).topics
        exists = ErrorCode.topic_already_exists if options["if_not_exists"] else None
        if self._check(result, tolerated=exists):
            self.stdout.write(f"Created topic {topic}.")

    def _describe(self) -> None:
        topics = self._topics()
        wanted = self.options["topic"]
        if wanted:
            if wanted not in topics:
                raise CommandError(f"Topic '{wanted}' does not exist as expected")
            topics = {wanted: topics[wanted]}
        for name in sorted(topics):
            meta = topics[name]
            if meta.error_code != ErrorCode.none:
                raise CommandError(f"Topic {name}: {kafka_error_text(meta.error_code, None)}")
            (configs,) = self._send(describe_configs_request(kind="topic", name=name)).results
            self._check(configs)
            overrides = ",".join(
                f"{c.name}={c.value}"
                for c in sorted(configs.configs, key=lambda c: c.name)
                if c.config_source == _DYNAMIC_TOPIC_CONFIG
            )
            partitions = sorted(meta.partitions, key=lambda p: p.partition_index)
            rf = len(partitions[0].replica_nodes) if partitions else 0
            self.stdout.write(
                f"Topic: {name}\tPartitionCount: {len(partitions)}\tReplicationFactor: {rf}"
                f"\tConfigs: {overrides}"
            )
            for p in partitions:
                self.stdout.write(
                    f"\tTopic: {name}\tPartition: {p.partition_index}\tLeader: {p.leader_id}"
                    f"\tReplicas: {','.join(map(str, p.replica_nodes))}"
                    f"\tIsr: {','.join(map(str, p.isr_nodes))}"
                )

    def _alter(self) -> None:
        topic = self._require_topic()
        count = self.options["partitions"]
        if count is None:
            raise CommandError("--alter needs --partitions (use `manage.py configs` for configs)")
        if self.options["if_exists"] and not self._exists(topic):
            return
        request = topic_partitions_request(
            name=topic, partitions_count=count, timeout=request_timeout(self.options["timeout"])
        )
        (result,) = self._send(request).results
        if self._check(result, tolerated=self._missing_ok()):
            self.stdout.write(f"Topic {topic} now has {count} partitions.")

    def _delete(self) -> None:
        topic = self._require_topic()
        if self.options["if_exists"] and not self._exists(topic):
            return  # kafka-topics --if-exists: a missing topic is silently not deleted
        request = topic_delete_request(name=topic, timeout=request_timeout(self.options["timeout"]))
        (result,) = self._send(request).responses
        if self._check(result, tolerated=self._missing_ok()):
            self.stdout.write(f"Deleted topic {topic}.")

    def _missing_ok(self) -> ErrorCode | None:
        return ErrorCode.unknown_topic_or_partition if self.options["if_exists"] else None

    def _exists(self, topic: str) -> bool:
        found = self._topics().get(topic)
        return found is not None and found.error_code == ErrorCode.none
