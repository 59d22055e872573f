"""``manage.py leader-election``: ``kafka-leader-election.sh`` parity.

    manage.py leader-election --election-type preferred --all-topic-partitions
    manage.py leader-election --election-type preferred --topic T --partition 0
    manage.py leader-election --election-type unclean --path-to-json-file partitions.json

The JSON file is Kafka's: ``{"partitions": [{"topic": "T", "partition": 0}, ...]}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from kio.schema.errors import ErrorCode

from brokers.management.kafka_admin import add_bootstrap_argument, kafka_error_text, tool_target
from brokers.management.protocol_admin import request_timeout, send_to_controller
from brokers.ops.requests import ELECTION_TYPES, elect_leaders_request


class Command(BaseCommand):
    help = "Elect preferred or unclean leaders (kafka-leader-election.sh parity)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_bootstrap_argument(parser)
        parser.add_argument("--election-type", required=True, choices=sorted(ELECTION_TYPES))
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--all-topic-partitions", action="store_true")
        scope.add_argument("--topic", help="with --partition: one partition")
        scope.add_argument("--path-to-json-file", help='{"partitions":[{"topic","partition"}]}')
        parser.add_argument("--partition", type=int)
        parser.add_argument("--timeout", type=float, default=30.0)

    def handle(self, *args: Any, **options: Any) -> None:
        targets = self._targets(options)
        request = elect_leaders_request(
            targets,
            election_type=ELECTION_TYPES[options["election_type"]],
            timeout=request_timeout(options["timeout"]),
        )
        response = send_to_controller(tool_target(options), request)
        if response.error_code != ErrorCode.none:
            text = kafka_error_text(response.error_code, getattr(response, "error_message", None))
            raise CommandError(f"Error completing leader election: {text}")
        done, valid, failed = [], [], []
        for topic in response.replica_election_results:
            for result in topic.partition_result:
                name = f"{topic.topic}-{result.partition_id}"
                if result.error_code == ErrorCode.none:
                    done.append(name)
                elif result.error_code == ErrorCode.election_not_needed:
                    valid.append(name)
                else:
                    text = kafka_error_text(result.error_code, result.error_message)
                    failed.append(f"{name}: {text}")
        kind = options["election_type"].upper()
        if done:
            self.stdout.write(
                f"Successfully completed leader election ({kind}) for partitions {', '.join(done)}"
            )
        if valid:
            self.stdout.write(f"Valid replica already elected for partitions {', '.join(valid)}")
        if not done and not valid and not failed:
            self.stdout.write(f"No partition needed a {kind.lower()} leader election")
        if failed:
            raise CommandError(
                f"Error completing leader election ({kind}) for partitions {', '.join(failed)}"
            )

    def _targets(self, options: dict[str, Any]) -> list[tuple[str, int]] | None:
        if options["all_topic_partitions"]:
            return None
        if options["topic"]:
            if options["partition"] is None:
                raise CommandError("--topic needs --partition")
            return [(options["topic"], options["partition"])]
        path = Path(options["path_to_json_file"])
        try:
            data = json.loads(path.read_text())
            return [(item["topic"], int(item["partition"])) for item in data["partitions"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CommandError(f"--path-to-json-file {path}: {exc}") from None
