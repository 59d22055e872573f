"""The Kafka-tool-parity commands (`manage.py topics`, `manage.py configs`) and `runbroker`'s
flag checks.

``topics`` and ``configs`` run in the test process the way ``manage.py`` runs them
(``tests.suite.commands``: same argv, parser, messages and exit status, without an interpreter
start per command); ``test_the_command_line_as_an_operator_runs_it`` runs them as real
``manage.py`` processes. ``runbroker`` is no Django command and always runs as a process.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.suite.commands import failed_cleanly, manage, manage_process, succeeded
from tests.weir.clients.helpers import create_topic
from tests.weir.inprocess import ThreadedBroker

pytestmark = pytest.mark.integration


def ok(*args: str) -> str:
    """Run a command that must succeed; its stdout."""
    return succeeded(manage(*args))


def fails(*args: str) -> str:
    """Run a command that must fail cleanly; its stderr (no traceback)."""
    return failed_cleanly(manage(*args))


def topics(broker: ThreadedBroker, *args: str) -> list[str]:
    return ["topics", "--bootstrap-server", broker.bootstrap, *args]


def configs(broker: ThreadedBroker, *args: str) -> list[str]:
    return ["configs", "--bootstrap-server", broker.bootstrap, *args]


def test_topics_create_list_describe_alter_delete(module_broker: ThreadedBroker) -> None:
    b = module_broker
    out = ok(
        *topics(b, "--create", "--topic", "cli-orders", "--partitions", "3"),
        *("--replication-factor", "1", "--config", "retention.ms=86400000"),
        *("--config", "cleanup.policy=compact"),
    )
    assert out.strip() == "Created topic cli-orders."
    assert "cli-orders" in ok(*topics(b, "--list")).split()

    lines = ok(*topics(b, "--describe", "--topic", "cli-orders")).splitlines()
    assert lines[0] == (
        "Topic: cli-orders\tPartitionCount: 3\tReplicationFactor: 1"
        "\tConfigs: cleanup.policy=compact,retention.ms=86400000"
    )
    assert lines[1:] == [
        f"\tTopic: cli-orders\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1" for p in range(3)
    ]

    out = ok(*topics(b, "--alter", "--topic", "cli-orders", "--partitions", "5"))
    assert out.strip() == "Topic cli-orders now has 5 partitions."
    lines = ok(*topics(b, "--describe", "--topic", "cli-orders")).splitlines()
    assert "PartitionCount: 5" in lines[0]
    assert len(lines) == 6
    assert (b.data_dir / "cli-orders-4").is_dir()

    assert (
        ok(*topics(b, "--delete", "--topic", "cli-orders")).strip() == "Deleted topic cli-orders."
    )
    assert "cli-orders" not in ok(*topics(b, "--list")).split()
    assert not (b.data_dir / "cli-orders-0").exists()


@pytest.fixture(scope="module")
def existing_topic(module_broker: ThreadedBroker) -> str:
    create_topic(module_broker.bootstrap, "cli-exists", partitions=2)
    return "cli-exists"


TOPIC_ERRORS = [
    (["--create", "--topic", "cli-exists"], ["TOPIC_ALREADY_EXISTS", "'cli-exists' already"]),
    (["--create", "--topic", "bad/name"], ['"bad/name" is illegal']),
    (["--create", "--topic", "a" * 250], ["illegal", "249"]),
    (
        ["--create", "--topic", "cli-x", "--config", "retention.ms=abc"],
        ["INVALID_CONFIG", "Invalid value abc for configuration retention.ms"],
    ),
    (
        ["--create", "--topic", "cli-x", "--config", "nosuch.key=1"],
        ["INVALID_CONFIG", "nosuch.key"],
    ),
    (["--create", "--topic", "cli-x", "--config", "oops"], ["--config", "'oops'"]),
    (["--create", "--topic", "cli-x", "--replication-factor", "3"], ["REPLICATION_FACTOR"]),
    (["--create"], ["--topic is required"]),
    (["--alter", "--topic", "cli-exists", "--partitions", "1"], ["INVALID_PARTITIONS"]),
    (["--alter", "--topic", "cli-exists"], ["--partitions"]),
    (["--alter", "--topic", "cli-nosuch", "--partitions", "3"], ["UNKNOWN_TOPIC_OR_PART"]),
    (["--delete", "--topic", "cli-nosuch"], ["UNKNOWN_TOPIC_OR_PART"]),
    (["--describe", "--topic", "cli-nosuch"], ["'cli-nosuch' does not exist"]),
]


@pytest.mark.parametrize(
    ("args", "expected"), TOPIC_ERRORS, ids=[" ".join(a)[:50] for a, _ in TOPIC_ERRORS]
)
def test_topics_errors_exit_non_zero_with_a_clear_message(
    module_broker: ThreadedBroker, existing_topic: str, args: list[str], expected: list[str]
) -> None:
    stderr = fails(*topics(module_broker, *args))
    for text in expected:
        assert text in stderr, stderr
    # A rejected --create leaves nothing behind (configs are validated before creating).
    listed = AdminClient({"bootstrap.servers": module_broker.bootstrap}).list_topics(timeout=10)
    assert "cli-x" not in listed.topics


def test_topics_if_exists_and_if_not_exists_tolerate(
    module_broker: ThreadedBroker, existing_topic: str
) -> None:
    ok(*topics(module_broker, "--create", "--topic", existing_topic, "--if-not-exists"))
    assert ok(*topics(module_broker, "--delete", "--topic", "cli-nosuch", "--if-exists")) == ""
    assert (
        ok(
            *topics(
                module_broker,
                *("--alter", "--topic", "cli-nosuch", "--partitions", "3", "--if-exists"),
            )
        )
        == ""
    )


def dynamic_configs(broker: ThreadedBroker, topic: str, *extra: str) -> dict[str, str]:
    """``configs --describe`` as ``{key: "value sensitive=... synonyms={...}"}``."""
    out = ok(
        *configs(broker, "--entity-type", "topics", "--entity-name", topic, "--describe", *extra)
    )
    lines = out.splitlines()
    assert lines[0] == f"{'All' if extra else 'Dynamic'} configs for topic {topic} are:"
    entries = {}
    for line in lines[1:]:
        assert line.startswith("  ")
        key, _, rest = line.strip().partition("=")
        entries[key] = rest
    return entries


def test_configs_describe_add_list_value_and_delete(module_broker: ThreadedBroker) -> None:
    b = module_broker
    create_topic(b.bootstrap, "cli-cfg", **{"retention.ms": "86400000"})
    assert dynamic_configs(b, "cli-cfg") == {
        "retention.ms": "86400000 sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}",
    }

    out = ok(
        *configs(b, "--entity-type", "topics", "--entity-name", "cli-cfg", "--alter"),
        *("--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]"),
    )
    assert out.strip() == "Completed updating config for topic cli-cfg."
    entries = dynamic_configs(b, "cli-cfg")
    assert set(entries) == {"retention.ms", "cleanup.policy"}
    assert entries["retention.ms"].startswith("60000 ")
    assert entries["cleanup.policy"].startswith("compact,delete ")
    assert "DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete" in entries["cleanup.policy"]

    ok(
        *configs(b, "--entity-type", "topics", "--entity-name", "cli-cfg", "--alter"),
        *("--delete-config", "retention.ms,segment.ms"),
    )
    assert set(dynamic_configs(b, "cli-cfg")) == {"cleanup.policy"}
    everything = dynamic_configs(b, "cli-cfg", "--all")
    assert everything["retention.ms"].startswith("604800000 ")  # back to the default
    assert everything["segment.bytes"].startswith("1073741824 ")
    assert everything["cleanup.policy"].startswith("compact,delete ")


CONFIG_ERRORS = [
    (["--entity-name", "cli-nosuch", "--describe"], ["cli-nosuch does not exist"]),
    (
        ["--entity-name", "cli-exists", "--alter", "--add-config", "retention.ms=abc"],
        ["Invalid value abc for configuration retention.ms"],
    ),
    (
        ["--entity-name", "cli-exists", "--alter", "--add-config", "nosuch.key=1"],
        ["nosuch.key"],
    ),
    (["--entity-name", "cli-exists", "--alter", "--add-config", "novalue"], ["'novalue'"]),
    (["--entity-name", "cli-exists", "--alter"], ["--add-config"]),
    (["--entity-default", "--describe"], ["--entity-default"]),
    (["--describe"], ["--entity-name"]),
]


@pytest.mark.parametrize(
    ("args", "expected"), CONFIG_ERRORS, ids=[" ".join(a)[:50] for a, _ in CONFIG_ERRORS]
)
def test_configs_errors_exit_non_zero_with_a_clear_message(
    module_broker: ThreadedBroker, existing_topic: str, args: list[str], expected: list[str]
) -> None:
    stderr = fails(*configs(module_broker, "--entity-type", "topics", *args))
    for text in expected:
        assert text in stderr, stderr


def test_configs_describe_a_broker(module_broker: ThreadedBroker) -> None:
    out = ok(
        *configs(module_broker, "--entity-type", "brokers", "--entity-name", "1", "--describe")
    )
    assert out.splitlines() == ["Dynamic configs for broker 1 are:"]
    out = ok(
        *configs(module_broker, "--entity-type", "brokers", "--entity-name", "1"),
        *("--describe", "--all"),
    )
    assert out.splitlines()[0] == "All configs for broker 1 are:"
    assert "  num.partitions=1 sensitive=false" in out
    assert "  log.retention.hours=168 sensitive=false" in out


def test_configs_broker_entity_default_applies_cluster_wide(broker: ThreadedBroker) -> None:
    create_topic(broker.bootstrap, "cli-default")
    default = ["--entity-type", "brokers", "--entity-default"]
    out = ok(*configs(broker, *default, "--alter", "--add-config", "log.retention.ms=3600000"))
    assert out.strip() == "Completed updating config for the default broker."
    try:
        out = ok(*configs(broker, *default, "--describe"))
        assert "  log.retention.ms=3600000 " in out
        out = ok(*configs(broker, "--entity-type", "brokers", "--entity-name", "1", "--describe"))
        assert "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000" in out
        # Topics without an override take their default from the broker's effective config.
        assert dynamic_configs(broker, "cli-default", "--all")["retention.ms"].startswith(
            "3600000 "
        )
    finally:
        ok(*configs(broker, *default, "--alter", "--delete-config", "log.retention.ms"))
    assert dynamic_configs(broker, "cli-default", "--all")["retention.ms"].startswith("604800000 ")


BAD_FLAGS = [
    (["--config", "nosuch.key=1"], ["--config nosuch.key=1", "Unknown broker config name"]),
    (["--config", "num.partitions=abc"], ["--config num.partitions=abc", "Invalid value abc"]),
    (["--listen", "nonsense"], ["--listen", "'nonsense'"]),
    (["--listen", "127.0.0.1:70000"], ["--listen", "70000"]),
    (["--advertise", "nohost"], ["--advertise", "'nohost'"]),
    (["--broker-id", "-1"], ["--broker-id", "-1"]),
]


@pytest.mark.parametrize(("flags", "expected"), BAD_FLAGS, ids=[" ".join(f) for f, _ in BAD_FLAGS])
def test_runbroker_rejects_bad_flags_naming_the_flag(
    redis_server: str, cluster_id: str, tmp_path: Path, flags: list[str], expected: list[str]
) -> None:
    # Good values for the required flags; the one under test replaces its default.
    argv = {"--broker-id": "9", "--listen": "127.0.0.1:1", "--data-dir": str(tmp_path / "data")}
    flag, value = flags
    extra = flags if flag == "--config" else []
    if flag != "--config":
        argv[flag] = value
    args = [item for pair in argv.items() for item in pair] + extra
    env = {"WEIR_REDIS_URL": redis_server, "WEIR_CLUSTER_ID": cluster_id}
    stderr = failed_cleanly(manage_process("runbroker", *args, env=env))
    for text in expected:
        assert text in stderr, stderr


def test_runbroker_on_a_busy_port_exits_naming_the_address(
    redis_server: str, cluster_id: str, tmp_path: Path
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {"WEIR_REDIS_URL": redis_server, "WEIR_CLUSTER_ID": cluster_id}
        proc = manage_process(
            "runbroker",
            *("--broker-id", "9", "--listen", f"127.0.0.1:{port}"),
            *("--data-dir", str(tmp_path / "data")),
            env=env,
        )
    assert proc.returncode != 0
    assert "address already in use" in proc.stderr
    assert str(port) in proc.stderr


def test_the_command_line_as_an_operator_runs_it(
    module_broker: ThreadedBroker, existing_topic: str
) -> None:
    """``manage.py`` itself: its output, exit status 0 or 1 and a message, no traceback."""
    listed = manage_process(*topics(module_broker, "--list"))
    assert listed.returncode == 0, listed.stderr
    assert existing_topic in listed.stdout.split()
    missing = manage_process(*topics(module_broker, "--describe", "--topic", "cli-nosuch"))
    assert missing.returncode == 1
    assert "'cli-nosuch' does not exist" in failed_cleanly(missing)
