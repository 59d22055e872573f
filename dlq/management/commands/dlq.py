"""``manage.py dlq``: dead letter queues from the command line, the API's operations.

    manage.py dlq list
    manage.py dlq records TOPIC [--partition P] [--start OFFSET] [--limit N]
                                [--original-topic T] [--exception TEXT] [--grep TEXT]
    manage.py dlq replay TOPIC (--all | --range P:START:END ... | --record P:OFFSET ...)
                               [--original-topic T] [--exception TEXT] [--grep TEXT]
                               [--target-topic T]
                               [--dry-run] [--purge]
    manage.py dlq purge TOPIC --before P:OFFSET [P:OFFSET ...]

A thin shell over :mod:`dlq.selectors` and :mod:`dlq.replay` for the cluster of
``WEIR_REDIS_URL`` / ``WEIR_CLUSTER_ID``: ``replay`` plans and produces in this process
(printing its progress) instead of queueing a Celery job, and exits non-zero unless every
record was acknowledged. Records print one JSON object per line.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane.errors import ApiError
from dlq import replay, selectors


def _numbers(text: str, *, fields: int, flag: str, shape: str) -> list[int]:
    parts = text.split(":")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != fields or any(v < 0 for v in values):
        raise CommandError(f"{flag} {text!r}: expected {shape} (non-negative integers)")
    return values


class Command(BaseCommand):
    help = "List dead letter queues, read their records, replay them to their topics, purge."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        actions.add_parser("list", help="the DLQ topics")
        records = actions.add_parser("records", help="records with their error context")
        records.add_argument("topic", metavar="TOPIC")
        records.add_argument("--partition", type=int, default=0)
        records.add_argument("--start", type=int, help="default: the log start offset")
        records.add_argument("--limit", type=int, default=selectors.DEFAULT_LIMIT)
        again = actions.add_parser("replay", help="produce records back to their topics")
        again.add_argument("topic", metavar="TOPIC")
        which = again.add_mutually_exclusive_group(required=True)
        which.add_argument("--all", action="store_true", help="every record the DLQ holds")
        which.add_argument("--range", nargs="+", metavar="P:START:END", help="END exclusive")
        which.add_argument("--record", nargs="+", metavar="P:OFFSET")
        again.add_argument("--target-topic", help="default: each record's original topic")
        again.add_argument("--dry-run", action="store_true", help="print the plan only")
        again.add_argument("--purge", action="store_true", help="then delete what was replayed")
        for sub in (records, again):
            sub.add_argument("--original-topic", help="only dead letters of this topic")
            sub.add_argument("--exception", help="text in the exception class or message")
            sub.add_argument("--grep", help="text in the key or value")
        purge = actions.add_parser("purge", help="delete records before offsets")
        purge.add_argument("topic", metavar="TOPIC")
        purge.add_argument("--before", nargs="+", required=True, metavar="P:OFFSET")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except ApiError as exc:
            raise CommandError(exc.message) from None

    def _print(self, data: Any) -> None:
        self.stdout.write(json.dumps(data, ensure_ascii=False, default=str))

    def _list(self, options: dict[str, Any]) -> None:
        found = selectors.dlq_list(detect_budget_s=10.0)
        self.stdout.write(f"{'TOPIC':40} {'PARTITIONS':>10} {'RECORDS':>10}  DETECTED BY")
        for topic in found:
            self.stdout.write(
                f"{topic.name:40} {topic.partitions:>10} {topic.records:>10}  {topic.detected_by}"
            )

    def _records(self, options: dict[str, Any]) -> None:
        page = selectors.record_list(
            topic=options["topic"],
            partition=options["partition"],
            start=options["start"],
            limit=options["limit"],
            where=selectors.RecordFilter(
                original_topic=options["original_topic"],
                exception=options["exception"],
                text=options["grep"],
            ),
        )
        for record in page.records:
            self._print(record)
        if page.next is not None:
            self.stderr.write(f"more from offset {page.next} (--start {page.next})")

    def _replay(self, options: dict[str, Any]) -> None:
        ranges = [
            dict(zip(("partition", "start_offset", "end_offset"), values, strict=True))
            for values in (
                _numbers(r, fields=3, flag="--range", shape="PARTITION:START:END")
                for r in options["range"] or ()
            )
        ]
        records = [
            dict(zip(("partition", "offset"), values, strict=True))
            for values in (
                _numbers(r, fields=2, flag="--record", shape="PARTITION:OFFSET")
                for r in options["record"] or ()
            )
        ]
        asked = replay.ReplayRequest.resolve(
            topic=options["topic"],
            records=records or None,
            ranges=ranges or None,
            everything=options["all"],
            original_topic=options["original_topic"],
            exception=options["exception"],
            text=options["grep"],
            target_topic=options["target_topic"],
            purge=options["purge"],
        )
        if options["dry_run"]:
            self._print({"dry_run": True, **replay.plan(asked).as_dict()})
            return

        def progress(fraction: float, message: str = "") -> None:
            self.stderr.write(f"{fraction:6.1%} {message}")

        done = replay.replay(asked, progress)
        self._print(done.as_dict())
        if done.errors:
            raise CommandError("; ".join(done.errors))

    def _purge(self, options: dict[str, Any]) -> None:
        before: dict[int, int] = {}
        for text in options["before"]:
            partition, offset = _numbers(text, fields=2, flag="--before", shape="PARTITION:OFFSET")
            if partition in before:
                raise CommandError(f"--before: partition {partition} is given twice")
            before[partition] = offset
        self._print(
            {
                "topic": options["topic"],
                "partitions": replay.purge(topic=options["topic"], before=before),
            }
        )
