"""``manage.py metadata-snapshot``: export or import the whole cluster metadata (disaster
recovery when the Redis deployment is lost).

    manage.py metadata-snapshot --export FILE
    manage.py metadata-snapshot --import FILE

The cluster is ``WEIR_CLUSTER_ID`` in the Redis of ``WEIR_REDIS_URL`` (a ``redis+sentinel://``
URL reaches the primary), or ``--redis-url``. A thin shell over
:mod:`weir.metadata.snapshot_file`, where the file format, what is exported and what the
import moves forward are described. ``--import`` refuses a target that already holds the
cluster's metadata; the procedure is docs/operations.md, "When the whole Redis deployment is
lost".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from redis.exceptions import RedisError

from weir.metadata.redis_url import parse_redis_url
from weir.metadata.snapshot_file import (
    SnapshotFileError,
    SnapshotImportError,
    TargetNotEmptyError,
    export_to_file,
    import_from_file,
)


class Command(BaseCommand):
    help = (
        "Export the cluster's whole metadata from Redis into a JSON file, or import such a "
        "file into an empty Redis (after losing the Redis deployment)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--export", metavar="FILE", help="write the metadata into FILE")
        action.add_argument(
            "--import", dest="import_", metavar="FILE", help="restore FILE into an empty Redis"
        )
        parser.add_argument(
            "--redis-url", help="the Redis to read or write (default: WEIR_REDIS_URL)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        url = options["redis_url"] or settings.WEIR_REDIS_URL
        try:
            parse_redis_url(url)
        except ValueError as exc:
            raise CommandError(f"--redis-url: {exc}") from None
        cluster_id = settings.WEIR_CLUSTER_ID
        try:
            if options["export"]:
                self._export(url, cluster_id, Path(options["export"]))
            else:
                self._import(url, cluster_id, Path(options["import_"]))
        except (SnapshotFileError, SnapshotImportError, TargetNotEmptyError) as exc:
            flag = "--export" if options["export"] else "--import"
            raise CommandError(f"{flag}: {exc}") from None
        except (RedisError, OSError) as exc:
            raise CommandError(f"cannot reach Redis at {url}: {exc}") from None

    def _export(self, url: str, cluster_id: str, path: Path) -> None:
        if path.is_dir():
            raise CommandError(f"--export: {path} is a directory; name a file")
        result = export_to_file(url, cluster_id=cluster_id, path=path)
        self.stdout.write(
            f"Exported cluster {cluster_id!r}: {result.topics} topics, {result.keys} keys, "
            f"metadata log at {result.metadata_log_position}, to {result.path}"
        )

    def _import(self, url: str, cluster_id: str, path: Path) -> None:
        result = import_from_file(url, cluster_id=cluster_id, path=path)
        self.stdout.write(
            f"Imported cluster {cluster_id!r} from {path}: {result.topics} topics, "
            f"{result.keys} keys; controller epoch now {result.controller_epoch}, next "
            f"producer id {result.next_producer_id}, metadata log continues after "
            f"{result.metadata_log_position}, new incarnation {result.incarnation}"
        )
