"""Every admin tool logs in with ``--command-config FILE`` (Kafka's client properties), and the
broker's authorizer judges the principal the file names.

Against ``acl_broker`` (in process: a SASL_PLAINTEXT listener, the authorizer on, ``alice`` the
super user, ``bob`` an ordinary user): each tool run as alice through a Java-style file
succeeds, the same run as bob is refused by the authorizer with a clean error, and
``scram-users`` changes credentials through AlterUserScramCredentials on the broker (so bob may
not). One test runs ``manage.py`` as a process: that the flag reaches the tool from a real
command line. The SASL_SSL path (``ssl.*`` to both kinds of client) runs against the TLS
broker of test_tls_clients.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.suite.commands import Completed, failed_cleanly, manage, manage_process, succeeded
from tests.weir.security.conftest import USERS, SaslBroker, sasl_conf
from tests.weir.security.test_tls_clients import TlsBroker, tls_broker
from tests.weir.security.tls_certs import tls_certs

__all__ = ["tls_broker", "tls_certs"]  # fixtures, used by name below

pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


def jaas(user: str, password: str | None = None) -> str:
    secret = USERS[user][0] if password is None else password
    return (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{secret}";'
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """alice's file in Kafka's Java form, bob's in librdkafka's."""
    directory = tmp_path_factory.mktemp("command-config")
    alice = directory / "alice.properties"
    alice.write_text(
        "# as for kafka-topics.sh --command-config\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=SCRAM-SHA-256\n"
        f"sasl.jaas.config={jaas('alice')}\n"
    )
    bob = directory / "bob.properties"
    bob.write_text(
        "security.protocol: SASL_PLAINTEXT\n"
        "sasl.mechanism: SCRAM-SHA-256\n"
        "sasl.username: bob\n"
        f"sasl.password: {USERS['bob'][0]}\n"
    )
    return {"alice": str(alice), "bob": str(bob)}


def tool(broker: SaslBroker, user_file: str, name: str, *args: str) -> Completed:
    return manage(name, "--bootstrap-server", broker.sasl, "--command-config", user_file, *args)


def as_alice(broker: SaslBroker, files: dict[str, str], name: str, *args: str) -> str:
    return succeeded(tool(broker, files["alice"], name, *args))


def as_bob_refused(broker: SaslBroker, files: dict[str, str], name: str, *args: str) -> str:
    return failed_cleanly(tool(broker, files["bob"], name, *args))


@pytest.fixture(scope="module")
def topic(acl_broker: SaslBroker, files: dict[str, str]) -> str:
    name = f"cc-{uuid.uuid4().hex[:8]}"
    as_alice(acl_broker, files, "topics", "--create", "--topic", name, "--partitions", "1")
    return name


def test_topics_as_the_files_principal(
    acl_broker: SaslBroker, files: dict[str, str], topic: str
) -> None:
    assert topic in as_alice(acl_broker, files, "topics", "--list").split()
    assert f"Topic: {topic}\tPartitionCount: 1" in as_alice(
        acl_broker, files, "topics", "--describe", "--topic", topic
    )
    error = as_bob_refused(
        acl_broker, files, "topics", "--create", "--topic", f"{topic}-bob", "--partitions", "1"
    )
    assert "AUTHORIZATION_FAILED" in error
    # bob sees no topic he may not describe.
    assert topic not in succeeded(tool(acl_broker, files["bob"], "topics", "--list"))


def test_configs_as_the_files_principal(
    acl_broker: SaslBroker, files: dict[str, str], topic: str
) -> None:
    entity = ("--entity-type", "topics", "--entity-name", topic)
    as_alice(acl_broker, files, "configs", *entity, "--alter", "--add-config", "retention.ms=1234")
    assert "retention.ms=1234" in as_alice(acl_broker, files, "configs", *entity, "--describe")
    error = as_bob_refused(
        acl_broker, files, "configs", *entity, "--alter", "--add-config", "retention.ms=1"
    )
    assert "AUTHORIZATION_FAILED" in error


def test_acls_as_the_files_principal(
    acl_broker: SaslBroker, files: dict[str, str], topic: str
) -> None:
    grant = ("--allow-principal", "User:bob", "--operation", "Describe", "--topic", topic)
    assert "error" in as_bob_refused(acl_broker, files, "acls", "--add", *grant).lower()
    as_alice(acl_broker, files, "acls", "--add", *grant)
    # Now the authorizer lets bob describe the topic: his --list shows it.
    assert topic in succeeded(tool(acl_broker, files["bob"], "topics", "--list")).split()
    assert "principal=User:bob" in as_alice(acl_broker, files, "acls", "--list", "--topic", topic)


def test_consumer_groups_as_the_files_principal(
    acl_broker: SaslBroker, files: dict[str, str], topic: str
) -> None:
    from confluent_kafka import Consumer, TopicPartition

    group = f"cc-group-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({**sasl_conf(acl_broker.sasl, "alice"), "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    assert group in as_alice(acl_broker, files, "consumer-groups", "--list").split()
    described = as_alice(acl_broker, files, "consumer-groups", "--describe", "--group", group)
    assert topic in described
    # bob may describe no group: the authorizer hides it from his --list.
    assert group not in succeeded(tool(acl_broker, files["bob"], "consumer-groups", "--list"))


def test_leader_election_and_reassignments_as_the_files_principal(
    acl_broker: SaslBroker, files: dict[str, str], topic: str, tmp_path: Path
) -> None:
    scope = ("--election-type", "preferred", "--topic", topic, "--partition", "0")
    out = as_alice(acl_broker, files, "leader-election", *scope)
    assert f"{topic}-0" in out
    assert "CLUSTER_AUTHORIZATION_FAILED" in as_bob_refused(
        acl_broker, files, "leader-election", *scope
    )
    as_alice(acl_broker, files, "reassign-partitions", "--list")
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1]}]}
        )
    )
    error = as_bob_refused(
        acl_broker, files, "reassign-partitions", "--execute", "--reassignment-json-file", str(plan)
    )
    assert "AUTHORIZATION_FAILED" in error.upper()


def _login_works(broker: SaslBroker, user: str, password: str) -> bool:
    admin = AdminClient(
        {
            **sasl_conf(broker.sasl, "alice"),
            "sasl.username": user,
            "sasl.password": password,
            "reconnect.backoff.ms": 2000,
        }
    )
    try:
        admin.list_topics(timeout=3)
    except Exception:
        return False
    return True


def test_scram_users_changes_credentials_through_the_broker_as_the_files_principal(
    acl_broker: SaslBroker, files: dict[str, str]
) -> None:
    user = f"dave-{uuid.uuid4().hex[:6]}"
    add = (
        "--alter",
        "--add-config",
        "SCRAM-SHA-256=[iterations=4096,password=dave-secret]",
        "--entity-type",
        "users",
        "--entity-name",
        user,
    )
    # No Redis access at all: the command only has the broker and the file's principal.
    unreachable = {"WEIR_REDIS_URL": "redis://127.0.0.1:1/0"}
    refused = manage(
        "scram-users",
        "--bootstrap-server",
        acl_broker.sasl,
        "--command-config",
        files["bob"],
        *add,
        settings=unreachable,
    )
    assert "CLUSTER_AUTHORIZATION_FAILED" in failed_cleanly(refused)
    assert not _login_works(acl_broker, user, "dave-secret")
    done = manage(
        "scram-users",
        "--bootstrap-server",
        acl_broker.sasl,
        "--command-config",
        files["alice"],
        *add,
        settings=unreachable,
    )
    assert f"Completed updating config for user {user}." in succeeded(done)
    assert _login_works(acl_broker, user, "dave-secret")
    described = manage(
        "scram-users",
        "--bootstrap-server",
        acl_broker.sasl,
        "--command-config",
        files["alice"],
        "--describe",
        "--entity-name",
        user,
        settings=unreachable,
    )
    assert "SCRAM-SHA-256=iterations=4096" in succeeded(described)


def test_a_bad_file_fails_before_any_connection_naming_the_property(
    acl_broker: SaslBroker, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.properties"
    bad.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n")
    for name in ("topics", "acls", "consumer-groups", "reassign-partitions"):
        error = failed_cleanly(tool(acl_broker, str(bad), name, "--list"))
        assert f"--command-config {bad}: sasl.mechanism=GSSAPI is not supported" in error
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        f"sasl.jaas.config={jaas('alice', 'not-her-password')}\n"
    )
    assert "uthentication" in failed_cleanly(tool(acl_broker, str(wrong), "topics", "--list"))


def test_manage_py_process_takes_command_config(
    acl_broker: SaslBroker, files: dict[str, str], topic: str
) -> None:
    """A process: --command-config from a real command line, Django set up from the
    environment, exit status 0."""
    done = manage_process(
        "topics",
        "--bootstrap-server",
        acl_broker.sasl,
        "--command-config",
        files["alice"],
        "--list",
    )
    assert topic in succeeded(done).split()


def test_tools_over_sasl_ssl_with_a_java_truststore(tls_broker: TlsBroker, tmp_path: Path) -> None:
    """SASL_SSL: the truststore reaches both client kinds (kio for topics, librdkafka for
    acls), with Kafka's default hostname check (the broker's certificate names 127.0.0.1)."""
    config = tmp_path / "alice-ssl.properties"
    config.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.jaas.config={jaas('alice')}\n"
        f"ssl.truststore.location={tls_broker.certs.ca}\n"
        "ssl.truststore.type=PEM\n"
    )
    name = f"tls-cc-{uuid.uuid4().hex[:6]}"
    base = ("--bootstrap-server", tls_broker.sasl_ssl, "--command-config", str(config))
    succeeded(manage("topics", *base, "--create", "--topic", name, "--partitions", "1"))
    assert name in succeeded(manage("topics", *base, "--list")).split()
    succeeded(manage("acls", *base, "--list", "--topic", name))
