"""``manage.py topics``: ``kafka-topics.sh`` parity over the Kafka protocol.

    manage.py topics --bootstrap-server HOST:PORT --create --topic T --partitions 3 \\
        --replication-factor 1 --config retention.ms=60000
    manage.py topics --list
    manage.py topics --describe [--topic T]
    manage.py topics --alter --topic T --partitions 6
    manage.py topics --delete --topic T

It is a Kafka client (confluent-kafka's AdminClient), so it works against any broker of the
cluster, and against Kafka itself. ``--bootstrap-server`` defaults to
``WEIR_BOOTSTRAP_SERVERS`` or 127.0.0.1:9092.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brokers.management.kafka_admin import (
    add_tool_arguments,
    admin_client,
    parse_config_pairs,
    wait_all,
)


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
        admin = admin_client(options["bootstrap_server"])
        if options["create"]:
            self._create(admin, options)
        elif options["list"]:
            for name in sorted(self._topics(admin, options)):
                self.stdout.write(name)
        elif options["describe"]:
            self._describe(admin, options)
        elif options["alter"]:
            self._alter(admin, options)
        elif options["delete"]:
            self._delete(admin, options)

    def _require_topic(self, options: dict[str, Any]) -> str:
        if not options["topic"]:
            raise CommandError("--topic is required for this action")
        return options["topic"]

    def _topics(self, admin: Any, options: dict[str, Any]) -> dict[str, Any]:
        metadata = admin.list_topics(timeout=options["timeout"])
        topics = metadata.topics
        if options["exclude_internal"]:
            topics = {k: v for k, v in topics.items() if not k.startswith("__")}
        return topics

    def _create(self, admin: Any, options: dict[str, Any]) -> None:
        from confluent_kafka.admin import NewTopic

        topic = self._require_topic(options)
        configs = parse_config_pairs(options["config"], flag="--config")
        new_topic = NewTopic(
            topic,
            num_partitions=options["partitions"] if options["partitions"] is not None else -1,
            replication_factor=(
                options["replication_factor"] if options["replication_factor"] is not None else -1
            ),
            config=configs,
        )
        futures = admin.create_topics([new_topic], request_timeout=options["timeout"])
        error = wait_all(
            futures,
            options["timeout"],
            ok_codes={"TOPIC_ALREADY_EXISTS"} if options["if_not_exists"] else set(),
        )
        if error:
            raise CommandError(f"Error while executing topic command : {error}")
        self.stdout.write(f"Created topic {topic}.")

    def _describe(self, admin: Any, options: dict[str, Any]) -> None:
        from confluent_kafka.admin import ConfigResource

        topics = self._topics(admin, options)
        if options["topic"]:
            if options["topic"] not in topics:
                raise CommandError(f"Topic '{options['topic']}' does not exist as expected")
            topics = {options["topic"]: topics[options["topic"]]}
        for name in sorted(topics):
            meta = topics[name]
            if meta.error is not None:
                raise CommandError(f"Topic {name}: {meta.error.str()}")
            resource = ConfigResource("topic", name)
            entries = admin.describe_configs([resource])[resource].result(options["timeout"])
            overrides = ",".join(
                f"{k}={v.value}"
                for k, v in sorted(entries.items())
                if v.source == 1  # DYNAMIC_TOPIC_CONFIG
            )
            partitions = sorted(meta.partitions.values(), key=lambda p: p.id)
            rf = len(partitions[0].replicas) if partitions else 0
            self.stdout.write(
                f"Topic: {name}\tPartitionCount: {len(partitions)}\tReplicationFactor: {rf}"
                f"\tConfigs: {overrides}"
            )
            for p in partitions:
                self.stdout.write(
                    f"\tTopic: {name}\tPartition: {p.id}\tLeader: {p.leader}"
                    f"\tReplicas: {','.join(map(str, p.replicas))}"
                    f"\tIsr: {','.join(map(str, p.isrs))}"
                )

    def _alter(self, admin: Any, options: dict[str, Any]) -> None:
        from confluent_kafka.admin import NewPartitions

        topic = self._require_topic(options)
        if options["partitions"] is None:
            raise CommandError("--alter needs --partitions (use `manage.py configs` for configs)")
        if options["if_exists"] and not self._exists(admin, topic, options["timeout"]):
            return
        futures = admin.create_partitions(
            [NewPartitions(topic, options["partitions"])], request_timeout=options["timeout"]
        )
        ok = {"UNKNOWN_TOPIC_OR_PART"} if options["if_exists"] else set()
        error = wait_all(futures, options["timeout"], ok_codes=ok)
        if error:
            raise CommandError(f"Error while executing topic command : {error}")
        self.stdout.write(f"Topic {topic} now has {options['partitions']} partitions.")

    def _delete(self, admin: Any, options: dict[str, Any]) -> None:
        topic = self._require_topic(options)
        if options["if_exists"] and not self._exists(admin, topic, options["timeout"]):
            return  # kafka-topics --if-exists: a missing topic is silently not deleted
        futures = admin.delete_topics([topic], request_timeout=options["timeout"])
        ok = {"UNKNOWN_TOPIC_OR_PART"} if options["if_exists"] else set()
        error = wait_all(futures, options["timeout"], ok_codes=ok)
        if error:
            raise CommandError(f"Error while executing topic command : {error}")
        self.stdout.write(f"Deleted topic {topic}.")

    def _exists(self, admin: Any, topic: str, timeout: float) -> bool:
        from confluent_kafka import KafkaException

        try:
            # All topics, not ``topic=``: naming one may auto-create it on the broker.
            metadata = admin.list_topics(timeout=timeout)
        except KafkaException as exc:
            raise CommandError(f"Error while executing topic command : {exc}") from None
        found = metadata.topics.get(topic)
        return found is not None and found.error is None
