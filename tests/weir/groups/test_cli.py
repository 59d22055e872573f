"""``manage.py consumer-groups`` against a real (in-process) broker.

The command runs in the test process the way ``manage.py`` runs it (``tests.suite.commands``:
same argv, parser, messages and exit status, without an interpreter start per command);
``test_the_command_line_as_an_operator_runs_it`` runs it as a real ``manage.py`` process.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.suite.commands import Completed, failed_cleanly, manage, manage_process, succeeded
from tests.weir.cluster.conftest import wait_until
from tests.weir.groups.test_consumer_groups import ConfluentMember, new_topic, produce
from tests.weir.inprocess import ThreadedBroker

pytestmark = pytest.mark.integration


def groups_cli(broker: ThreadedBroker, *args: str) -> Completed:
    """``consumer-groups`` in process; ``--force-rebalance`` finds the coordinator through
    the broker's Redis and cluster id (a process reads them from ``WEIR_*``)."""
    settings = {"WEIR_REDIS_URL": broker.redis_url, "WEIR_CLUSTER_ID": broker.cluster_id}
    return manage(*cli_args(broker, *args), settings=settings)


def cli_args(broker: ThreadedBroker, *args: str) -> list[str]:
    return ["consumer-groups", "--bootstrap-server", broker.bootstrap, *args]


def ok(broker: ThreadedBroker, *args: str) -> str:
    return succeeded(groups_cli(broker, *args))


def fails(broker: ThreadedBroker, *args: str) -> str:
    return failed_cleanly(groups_cli(broker, *args))


def table(output: str) -> list[list[str]]:
    lines = [line.split() for line in output.splitlines() if line.strip()]
    return [row for row in lines if row and row[0] != "GROUP" and "members." not in " ".join(row)]


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
        )
    finally:
        consumer.close()


def test_list_describe_members_and_state_of_a_live_group(group_broker: ThreadedBroker) -> None:
    bootstrap = group_broker.bootstrap
    topic = new_topic(bootstrap, partitions=2, records=20)
    group = f"cli-{uuid.uuid4().hex[:6]}"
    member = ConfluentMember(bootstrap, topic, group, **{"client.id": "cli-client"})
    member.start()
    try:
        wait_until(lambda: len(member.values) >= 20, 30, "consumed")
        wait_until(lambda: group in ok(group_broker, "--list").split(), 10, "listed")
        produce(bootstrap, topic, 6, start=20)  # lag appears once these are not consumed yet

        def described() -> list[list[str]] | None:
            rows = table(ok(group_broker, "--describe", "--group", group))
            return rows if len(rows) == 2 and all(r[6] != "-" for r in rows) else None

        rows = wait_until(described, 20, "two owned partitions")
        for row in rows:
            assert row[0] == group and row[1] == topic
            current, end, lag = int(row[3]), int(row[4]), int(row[5])
            assert lag == end - current >= 0
            assert row[6] == member.member_id and row[7] == "/127.0.0.1" and row[8] == "cli-client"
        assert sum(int(r[4]) for r in rows) == 26
        (members,) = table(ok(group_broker, "--describe", "--group", group, "--members"))
        assert members[1:] == [member.member_id, "/127.0.0.1", "cli-client", "2"]
        (state,) = table(ok(group_broker, "--describe", "--group", group, "--state"))
        assert state[-2:] == ["Stable", "1"] and state[-3] == "range"
        everything = ok(group_broker, "--describe", "--all-groups")
        assert group in {row[0] for row in table(everything)}
    finally:
        member.stop()


def test_reset_offsets_only_on_inactive_groups_with_every_strategy(
    group_broker: ThreadedBroker,
) -> None:
    bootstrap = group_broker.bootstrap
    topic = new_topic(bootstrap, partitions=2, records=40)
    group = f"reset-{uuid.uuid4().hex[:6]}"
    commit(bootstrap, group, topic, {0: 5, 1: 5})

    def plan(*how: str) -> dict[int, int]:
        out = ok(group_broker, "--reset-offsets", "--group", group, "--topic", topic, *how)
        return {int(r[2]): int(r[3]) for r in table(out)}

    ends = {int(r[2]): int(r[4]) for r in table(ok(group_broker, "--describe", "--group", group))}
    assert plan("--to-earliest", "--dry-run") == {0: 0, 1: 0}
    assert plan("--to-latest", "--dry-run") == ends
    assert plan("--shift-by", "2", "--dry-run") == {0: 7, 1: 7}
    assert plan("--shift-by", "-100", "--dry-run") == {0: 0, 1: 0}  # clamped to the start
    assert plan("--to-offset", "3", "--dry-run") == {0: 3, 1: 3}
    assert plan("--to-offset", "0", "--dry-run") == {0: 0, 1: 0}  # 0 is an offset too
    assert plan("--shift-by", "0", "--dry-run") == {0: 5, 1: 5}
    future = time.strftime("%Y-%m-%dT%H:%M:%S.000", time.gmtime(time.time() + 3600))
    assert plan("--to-datetime", future, "--dry-run") == ends
    # Without --execute nothing changes; with it the offsets move.
    committed = {
        int(r[2]): int(r[3]) for r in table(ok(group_broker, "--describe", "--group", group))
    }
    assert committed == {0: 5, 1: 5}
    assert plan("--to-offset", "3", "--execute") == {0: 3, 1: 3}
    committed = {
        int(r[2]): int(r[3]) for r in table(ok(group_broker, "--describe", "--group", group))
    }
    assert committed == {0: 3, 1: 3}

    member = ConfluentMember(bootstrap, topic, group)
    member.start()
    try:
        wait_until(lambda: member.partitions(), 30, "the member joined")
        stderr = fails(
            group_broker,
            "--reset-offsets",
            "--group",
            group,
            "--topic",
            topic,
            "--to-earliest",
            "--execute",
        )
        assert f"the group '{group}' is inactive, but the current state is Stable" in stderr
    finally:
        member.stop()


def test_delete_offsets_and_groups(group_broker: ThreadedBroker) -> None:
    bootstrap = group_broker.bootstrap
    topic = new_topic(bootstrap, partitions=2, records=4)
    other = new_topic(bootstrap, partitions=1, records=4)
    group = f"del-{uuid.uuid4().hex[:6]}"
    commit(bootstrap, group, topic, {0: 1, 1: 1})
    commit(bootstrap, group, other, {0: 2})
    out = ok(group_broker, "--delete-offsets", "--group", group, "--topic", topic)
    assert "Request succeed for deleting offsets" in out
    assert sorted(r[2] for r in table(out)[-2:]) == ["Successful", "Successful"]
    rows = table(ok(group_broker, "--describe", "--group", group))
    assert [(r[1], r[3]) for r in rows] == [(other, "2")]
    out = ok(group_broker, "--delete", "--group", group)
    assert f"Deletion of requested consumer groups ('{group}') was successful." in out
    assert group not in ok(group_broker, "--list").split()
    assert "GROUP_ID_NOT_FOUND" in fails(group_broker, "--delete", "--group", group)


def test_force_rebalance_makes_live_members_rejoin(group_broker: ThreadedBroker) -> None:
    bootstrap = group_broker.bootstrap
    topic = new_topic(bootstrap, partitions=2)
    group = f"force-{uuid.uuid4().hex[:6]}"
    member = ConfluentMember(bootstrap, topic, group)
    member.start()
    try:
        wait_until(lambda: len(member.partitions()) == 2, 30, "the member owns both")
        before = member.revocations
        out = ok(group_broker, "--force-rebalance", "--group", group)
        assert f"Group {group} is rebalancing" in out
        # The member saw REBALANCE_IN_PROGRESS, gave its partitions up and got them back.
        wait_until(
            lambda: member.revocations > before and len(member.partitions()) == 2,
            20,
            lambda: f"revocations {member.revocations}, owns {member.partitions()}",
        )
    finally:
        member.stop()
    assert "GROUP_ID_NOT_FOUND" in fails(group_broker, "--force-rebalance", "--group", "nobody")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--describe"], "--group is required"),
        (["--reset-offsets", "--group", "g", "--to-earliest"], "--topic or --all-topics"),
        (["--reset-offsets", "--group", "g", "--all-topics"], "exactly one of"),
        (
            ["--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "yesterday"],
            "--to-datetime 'yesterday'",
        ),
        (["--describe", "--group", "no-such-group"], "does not exist"),
        (["--list", "--execute"], "Option --execute takes one of these options: --reset-offsets"),
        (["--describe", "--group", "g", "--to-offset", "0"], "Option --to-offset takes one"),
        (["--delete", "--group", "g", "--topic", "t"], "Option --topic takes one"),
        (["--list", "--members"], "Option --members takes one of these options: --describe"),
        (["--describe", "--group", "g", "--members", "--state"], "can't be used with"),
        (["--describe", "--group", "g", "--all-groups"], "can't be used with"),
        (["--delete-offsets", "--group", "a", "--group", "b", "--topic", "t"], "exactly one"),
    ],
)
def test_bad_flags_are_named(group_broker: ThreadedBroker, args: list[str], expected: str) -> None:
    assert expected in fails(group_broker, *args)


def test_the_command_line_as_an_operator_runs_it(group_broker: ThreadedBroker) -> None:
    """``manage.py`` itself: exit status 0, or 1 and a message without a traceback."""
    env = {"WEIR_REDIS_URL": group_broker.redis_url, "WEIR_CLUSTER_ID": group_broker.cluster_id}
    listed = manage_process(*cli_args(group_broker, "--list"), env=env)
    assert listed.returncode == 0, listed.stderr
    missing = manage_process(
        *cli_args(group_broker, "--describe", "--group", "no-such-group"), env=env
    )
    assert missing.returncode == 1
    assert "does not exist" in failed_cleanly(missing)
