"""Every broker and topic config is implemented, refused, or of no effect.

The walk: each key of ``BROKER_CONFIGS`` and ``TOPIC_CONFIGS`` has one ``Support`` state.
An *implemented* key must be read by the broker runtime (a static proof over ``weir/``: a
broker key by its quoted name, or as the broker default of an implemented topic config; a
topic key through its ``TopicConfig`` field); the per-key behaviour tests live with the code
that reads it (e.g. tests/weir/replication/test_fetcher_configs.py). There is no fourth state
(issue 16 emptied the *not yet implemented* list that accepted only defaults, and removed
it). *Refused* keys fail with a message naming
them as unsupported, at start-up, over the wire (a real AdminClient) and from
``manage.py configs``.
docs/configuration.md lists every key with its state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from tests.suite.commands import failed_cleanly, manage
from tests.weir.inprocess import ThreadedBroker
from weir.config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigDef,
    InvalidConfigError,
    Support,
    describe_broker_config,
    parse_broker_overrides,
    validate_broker_dynamic_configs,
    validate_topic_configs,
)

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_SOURCE = "\n".join(
    path.read_text()
    for path in sorted((ROOT / "weir").rglob("*.py"))
    if path != ROOT / "weir" / "config.py"  # the table itself reads nothing
)
# Implemented keys read where the scan cannot see them, and why.
READ_INDIRECTLY = {
    "broker.id": "BrokerConfig holds it to runbroker --broker-id",
    "message.timestamp.difference.max.ms": (
        "effective_topic_config folds it into message.timestamp.before/after.max.ms"
    ),
}
TABLES: dict[str, Mapping[str, ConfigDef]] = {"broker": BROKER_CONFIGS, "topic": TOPIC_CONFIGS}


def _names(kind: str, state: str) -> set[str]:
    return {name for name, d in TABLES[kind].items() if d.support == state}


def _topic_field_read(name: str) -> bool:
    return re.search(rf"\.{name.replace('.', '_')}\b", RUNTIME_SOURCE) is not None


def _broker_key_read(name: str) -> bool:
    return f'"{name}"' in RUNTIME_SOURCE


def test_every_config_has_a_known_state() -> None:
    # Implemented, refused or of no effect: nothing is accepted only at its default any more.
    states = {Support.IMPLEMENTED, Support.REFUSED, Support.NO_EFFECT}
    assert {name for name in vars(Support) if name.isupper()} == {
        "IMPLEMENTED",
        "REFUSED",
        "NO_EFFECT",
    }
    for table in TABLES.values():
        assert {d.support for d in table.values()} <= states


def test_implemented_topic_configs_are_read_by_the_runtime() -> None:
    unread = [
        n
        for n in _names("topic", Support.IMPLEMENTED)
        if not _topic_field_read(n) and n not in READ_INDIRECTLY
    ]
    assert unread == [], "implemented but never read: refuse them or list them as debt"


def test_implemented_broker_configs_are_read_by_the_runtime() -> None:
    implemented_topics = _names("topic", Support.IMPLEMENTED)
    through_topic = {
        synonym.name for name in implemented_topics for synonym in TOPIC_CONFIGS[name].synonyms
    }
    unread = [
        n
        for n in sorted(_names("broker", Support.IMPLEMENTED))
        if not _broker_key_read(n) and n not in through_topic and n not in READ_INDIRECTLY
    ]
    assert unread == [], "implemented but never read: refuse them or list them as debt"


def test_docs_list_every_config_with_its_state() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text()
    for kind, heading in (("broker", "## Broker configs"), ("topic", "## Topic configs")):
        section = text.split(heading, 1)[1].split("\n## ", 1)[0]
        listed = dict(re.findall(r"^\| `([^`]+)` \| ([^|]+?) \|", section, re.MULTILINE))
        assert listed == {n: d.support for n, d in TABLES[kind].items()}, kind


# -- refused configs -------------------------------------------------------------------------
REFUSED = sorted(_names("broker", Support.REFUSED))


@pytest.mark.parametrize("name", REFUSED)
def test_refused_broker_config_stops_start_up_naming_it(name: str) -> None:
    value = BROKER_CONFIGS[name].to_string(BROKER_CONFIGS[name].default) or "x"
    with pytest.raises(InvalidConfigError, match=rf"^--config {re.escape(name)}=.*not supported"):
        parse_broker_overrides([f"{name}={value}"])


def test_refused_dynamic_broker_config_is_invalid_config_and_ignored_from_redis() -> None:
    name = "num.io.threads"
    assert name in REFUSED and not BROKER_CONFIGS[name].read_only
    with pytest.raises(InvalidConfigError, match=r"num\.io\.threads is not supported") as caught:
        validate_broker_dynamic_configs({name: "4"})
    assert caught.value.error_code == 40  # INVALID_CONFIG
    config = BrokerConfig(broker_id=1, dynamic_broker={name: "4"})
    assert config.get(name) == 8 and name not in config.dynamic_broker


def test_described_documentation_says_what_weir_does() -> None:
    entries = {e.name: e for e in describe_broker_config(BrokerConfig(broker_id=1))}
    assert entries["num.io.threads"].documentation.startswith("[Weir: refused: ")
    assert entries["log.message.downconversion.enable"].documentation.startswith(
        "[Weir: no effect: Weir serves Fetch v4 and later only"
    )
    assert entries["replica.fetch.max.bytes"].documentation == (
        BROKER_CONFIGS["replica.fetch.max.bytes"].doc
    )


def test_topic_validation_refuses_nothing_it_implements() -> None:
    assert validate_topic_configs({"file.delete.delay.ms": "5"}) == {"file.delete.delay.ms": "5"}


@pytest.mark.parametrize("value", ["true", "false"])
def test_a_refused_topic_config_is_invalid_config_whatever_its_value(value: str) -> None:
    with pytest.raises(InvalidConfigError, match=r"^preallocate is not supported by Weir") as e:
        validate_topic_configs({"preallocate": value})
    assert e.value.error_code == 40  # INVALID_CONFIG


def test_admin_client_alter_of_a_refused_config_gets_invalid_config(
    inprocess_broker: ThreadedBroker,
) -> None:
    broker = inprocess_broker
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    change = ConfigResource(
        "broker",
        str(broker.broker_id),
        incremental_configs=[
            ConfigEntry("num.io.threads", "4", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    with pytest.raises(KafkaException) as caught:
        admin.incremental_alter_configs([change])[change].result(15)
    error = caught.value.args[0]
    assert error.code() == KafkaError.INVALID_CONFIG
    assert "num.io.threads is not supported" in error.str()


def test_configs_command_names_a_refused_config_as_unsupported(
    inprocess_broker: ThreadedBroker,
) -> None:
    stderr = failed_cleanly(
        manage(
            "configs",
            *("--bootstrap-server", inprocess_broker.bootstrap),
            *("--entity-type", "brokers", "--entity-default"),
            *("--alter", "--add-config", "background.threads=4"),
        )
    )
    assert "background.threads is not supported by Weir" in stderr, stderr
