"""LIST-typed configs round-trip through DescribeConfigs as Kafka's tools show them.

A LIST value is comma-joined on the wire (``PLAIN,SCRAM-SHA-256,SCRAM-SHA-512``), whether it
is a default, a ``runbroker --config`` value, a dynamic broker override or a topic override.
The bug this guards against: a default written as a string was joined one character at a
time (``P,L,A,I,N,...``). Every LIST config in the broker and topic tables is covered, through
a real AdminClient (confluent-kafka) against an in-process broker; a new LIST config fails
``test_every_list_config_is_covered`` until it gets a sample value here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from tests.weir.inprocess import ThreadedBroker, threaded_broker
from weir.config import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigDef, ConfigType

TIMEOUT_S = 15

# Kafka's describe output for each LIST config's default (Weir's defaults, comma-joined).
BROKER_DEFAULTS = {
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "log.cleanup.policy": "delete",
}
TOPIC_DEFAULTS = {
    "cleanup.policy": "delete",
    "leader.replication.throttled.replicas": "",
    "follower.replication.throttled.replicas": "",
}
# A value of several elements for each, set through the path named in the test.
STATIC_SAMPLES = {"sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN"}
DYNAMIC_SAMPLES = {"log.cleanup.policy": "compact,delete"}
TOPIC_SAMPLES = {
    "cleanup.policy": "compact,delete",
    "leader.replication.throttled.replicas": "0:1,1:1",
    "follower.replication.throttled.replicas": "0:1,1:2",
}


def _list_configs(table: Mapping[str, ConfigDef]) -> set[str]:
    return {name for name, d in table.items() if d.type is ConfigType.LIST}


def test_every_list_config_is_covered() -> None:
    assert _list_configs(BROKER_CONFIGS) == set(BROKER_DEFAULTS)
    assert set(BROKER_DEFAULTS) == set(STATIC_SAMPLES) | set(DYNAMIC_SAMPLES)
    assert _list_configs(TOPIC_CONFIGS) == set(TOPIC_DEFAULTS) == set(TOPIC_SAMPLES)


@pytest.fixture
def list_broker(redis_server: str, cluster_id: str, tmp_path: Path) -> Iterator[ThreadedBroker]:
    """A broker whose static LIST configs are set to several elements."""
    configs = [f"{k}={v}" for k, v in STATIC_SAMPLES.items()]
    with threaded_broker(
        data_dir=tmp_path / "broker-1",
        redis_url=redis_server,
        cluster_id=cluster_id,
        configs=configs,
    ) as broker:
        yield broker


def _describe(admin: AdminClient, resource: ConfigResource) -> dict[str, ConfigEntry]:
    return admin.describe_configs([resource])[resource].result(TIMEOUT_S)


def _default_of(entry: ConfigEntry) -> str | None:
    """The DEFAULT_CONFIG synonym's value, as ``kafka-configs --describe --all`` lists it."""
    for synonym in entry.synonyms.values():
        if synonym.source == ConfigSource.DEFAULT_CONFIG.value:
            return synonym.value
    return None


def test_broker_list_configs_describe_comma_joined(list_broker: ThreadedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": list_broker.bootstrap})
    resource = ConfigResource("broker", str(list_broker.broker_id))

    before = _describe(admin, resource)
    for name, value in BROKER_DEFAULTS.items():
        assert before[name].value == STATIC_SAMPLES.get(name, value), name
        assert _default_of(before[name]) == value, name

    change = ConfigResource(
        "broker",
        str(list_broker.broker_id),
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in DYNAMIC_SAMPLES.items()
        ],
    )
    admin.incremental_alter_configs([change])[change].result(TIMEOUT_S)
    after = _describe(admin, resource)
    for name, value in DYNAMIC_SAMPLES.items():
        assert after[name].value == value, name
        assert _default_of(after[name]) == BROKER_DEFAULTS[name], name


def test_topic_list_configs_describe_comma_joined(list_broker: ThreadedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": list_broker.bootstrap})
    created = admin.create_topics(
        [
            NewTopic("lists-default", 2, 1),
            NewTopic("lists-set", 2, 1, config=dict(TOPIC_SAMPLES)),
        ]
    )
    for future in created.values():
        future.result(TIMEOUT_S)

    defaults = _describe(admin, ConfigResource("topic", "lists-default"))
    for name, value in TOPIC_DEFAULTS.items():
        assert defaults[name].value == value, name

    overridden = _describe(admin, ConfigResource("topic", "lists-set"))
    for name, value in TOPIC_SAMPLES.items():
        assert overridden[name].value == value, name
