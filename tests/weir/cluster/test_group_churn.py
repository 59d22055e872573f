"""Churn on a 3-broker cluster: members join one at a time and leave, in separate processes.

For every client library and assignor, 3 member processes join a group on a 6-partition
topic one after another and then leave one after another. After each rebalance settles, the
live members' assignments must be disjoint and complete (Kafka's ``test_valid_assignment``).
And at *every* moment, rebuilt from the members' own reports (CLOCK_MONOTONIC is
system-wide), no partition may have two owners.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import uuid

import pytest

from tests.suite.children import die_with_parent
from tests.weir.clients.conftest import ROOT
from tests.weir.cluster.conftest import Cluster, wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 6
# The module's shared cluster (``shared_cluster``): each case has a topic and group of its own.
CLUSTER_CONFIGS = [
    "offsets.topic.num.partitions=3",
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
]
CASES = [
    ("confluent", "range"),
    ("confluent", "roundrobin"),
    ("confluent", "cooperative-sticky"),
    ("kafka-python", "range"),
    ("kafka-python", "roundrobin"),
    ("kafka-python", "sticky"),
    ("aiokafka", "range"),
    ("aiokafka", "roundrobin"),
    ("aiokafka", "sticky"),
]


class Member:
    """One member process and the ownership reports it printed."""

    def __init__(
        self, name: str, library: str, assignor: str, bootstrap: str, topic: str, group: str
    ) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.weir.groups.member_process",
                library,
                assignor,
                bootstrap,
                topic,
                group,
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            preexec_fn=die_with_parent(),
        )
        self.reports: list[tuple[int, frozenset[int]]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            with self._lock:
                self.reports.append((event["t"], frozenset(event["owned"])))

    def owned(self) -> frozenset[int]:
        with self._lock:
            return self.reports[-1][1] if self.reports else frozenset()

    def leave(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(30) == 0, f"{self.name} did not exit cleanly"
        self._reader.join(10)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def valid(members: list[Member]) -> bool:
    """Disjoint (always asserted) and complete with every member owning something."""
    owned = [m.owned() for m in members]
    flat = [p for ps in owned for p in ps]
    assert len(flat) == len(set(flat)), f"two owners at once: {owned}"
    return sorted(flat) == list(range(PARTITIONS)) and all(owned)


def assert_never_two_owners(members: list[Member]) -> None:
    events = sorted((t, m.name, owned) for m in members for t, owned in m.reports)
    current: dict[str, frozenset[int]] = {}
    for t, name, owned in events:
        current[name] = owned
        flat = [p for ps in current.values() for p in ps]
        if len(flat) != len(set(flat)):
            pytest.fail(f"at t={t} ns a partition had two owners: {current}")


@pytest.mark.parametrize(("library", "assignor"), CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_members_joining_and_leaving_never_share_a_partition(
    shared_cluster: Cluster, library: str, assignor: str
) -> None:
    cluster = shared_cluster
    topic = f"churn-{library}-{assignor}"
    cluster.create_topic(topic, partitions=PARTITIONS)
    group = f"churn-{uuid.uuid4().hex[:6]}"
    bootstrap = cluster.bootstrap()
    members: list[Member] = []
    live: list[Member] = []

    def describe() -> str:
        return str({m.name: sorted(m.owned()) for m in live})

    try:
        for name in ("a", "b", "c"):
            member = Member(name, library, assignor, bootstrap, topic, group)
            members.append(member)
            live.append(member)
            wait_until(lambda: valid(live), 60, describe)
        for _ in range(2):
            live.pop(0).leave()
            wait_until(lambda: valid(live), 60, describe)
        assert live[0].owned() == frozenset(range(PARTITIONS))
    finally:
        for member in members:
            member.kill()
    assert_never_two_owners(members)
