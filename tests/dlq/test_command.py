"""``manage.py dlq``: the API's operations from the command line, against the shared cluster
(the command runs in-process with ``call_command``, as manage.py would run it)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest
from django.core.management import CommandError, call_command

from tests.controlplane.lag_helpers import produce_records
from tests.dlq.test_api import connect_headers, read_all
from tests.weir.cluster.conftest import Cluster

pytestmark = pytest.mark.django_db


def run(*argv: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("dlq", *argv, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def dead_letters(cp_cluster: Cluster, unique: Callable[[str], str]) -> tuple[str, str]:
    """(original topic, DLQ ``dlq-<original>`` holding 4 dead letters of its partition 0)."""
    original = cp_cluster.create_topic(unique("payments"))
    dlq = cp_cluster.create_topic(f"dlq-{original}")
    records = [
        {"value": f"p{i}".encode(), "headers": connect_headers(original, 0, i, f"bad {i}")}
        for i in range(4)
    ]
    produce_records(cp_cluster, dlq, records)
    return original, dlq


def test_list_records_dry_run_replay_and_purge_from_the_command_line(
    cp_cluster: Cluster, dead_letters: tuple[str, str]
) -> None:
    original, dlq = dead_letters
    listing, _ = run("list")
    assert any(
        line.split()[:1] == [dlq] and line.endswith("pattern") for line in listing.splitlines()
    )
    out, _ = run("records", dlq, "--exception", "bad 2")
    (line,) = out.splitlines()
    record = json.loads(line)
    assert (record["offset"], record["error"]["original_topic"]) == (2, original)
    plan = json.loads(run("replay", dlq, "--range", "0:0:2", "--dry-run")[0])
    assert plan["targets"] == [{"topic": original, "partition": 0, "records": 2}]
    assert read_all(cp_cluster, original, 1) == []
    done, progress = run("replay", dlq, "--range", "0:0:2", "--purge")
    assert json.loads(done)["replayed"] == 2 and "100.0%" in progress
    assert [m.value() for m in read_all(cp_cluster, original, 1)] == [b"p0", b"p1"]
    purged = json.loads(run("purge", dlq, "--before", "0:3")[0])
    assert purged["partitions"] == [{"partition": 0, "low_watermark": 3}]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("replay", "{dlq}", "--range", "0:5"), "--range '0:5': expected PARTITION:START:END"),
        (("replay", "{dlq}", "--record", "x:1"), "--record 'x:1': expected PARTITION:OFFSET"),
        (("replay", "{dlq}", "--record", "0:99"), "offset 99 is out of range"),
        (("purge", "{dlq}", "--before", "0:1", "0:2"), "partition 0 is given twice"),
        (("records", "{dlq}", "--limit", "0"), "limit 0 must be between"),
        (("records", "no-such-dlq-topic"), "not found"),
    ],
)
def test_bad_arguments_stop_with_a_message_naming_them(
    dead_letters: tuple[str, str], argv: tuple[str, ...], words: str
) -> None:
    _, dlq = dead_letters
    with pytest.raises(CommandError, match=words.replace("(", r"\(").replace("[", r"\[")):
        run(*(a.format(dlq=dlq) for a in argv))
