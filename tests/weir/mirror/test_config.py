"""MirrorConfig: MM2's flows, precedence, defaults, refusals and --clusters (pure logic)."""

from __future__ import annotations

import logging

import pytest

from weir.mirror.config import MirrorConfig, MirrorConfigError
from weir.mirror.policy import IdentityReplicationPolicy
from weir.mirror.properties import parse_properties

# config/connect-mirror-maker.properties as shipped with Kafka (comments trimmed).
KAFKA_EXAMPLE = """\
# Licensed to the Apache Software Foundation (ASF) ...
# see org.apache.kafka.clients.consumer.ConsumerConfig for more details

# specify any number of cluster aliases
clusters = A, B

# connection information for each cluster
# This is a comma separated host:port pairs for each cluster
# for e.g. "A_host1:9092, A_host2:9092, A_host3:9092"
A.bootstrap.servers = A_host1:9092, A_host2:9092, A_host3:9092
B.bootstrap.servers = B_host1:9092, B_host2:9092, B_host3:9092

# enable and configure individual replication flows
A->B.enabled = true

# regex which defines which topics gets replicated. For eg "foo-.*"
A->B.topics = .*

B->A.enabled = true
B->A.topics = .*

# Setting replication factor of newly created remote topics
replication.factor=1

############################# Internal Topic Settings  #############################
checkpoints.topic.replication.factor=1
heartbeats.topic.replication.factor=1
offset-syncs.topic.replication.factor=1

offset.storage.replication.factor=1
status.storage.replication.factor=1
config.storage.replication.factor=1
"""

BASE = {
    "clusters": "east, west",
    "east.bootstrap.servers": "east:9092",
    "west.bootstrap.servers": "west:9092",
    "east->west.enabled": "true",
}


def config(**extra: str) -> MirrorConfig:
    return MirrorConfig.from_properties({**BASE, **extra})


def refused(props: dict[str, str], clusters: list[str] | None = None) -> str:
    with pytest.raises(MirrorConfigError) as info:
        MirrorConfig.from_properties(props, clusters)
    return str(info.value)


def test_kafka_example_file_end_to_end(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="weir.mirror"):
        cfg = MirrorConfig.from_properties(parse_properties(KAFKA_EXAMPLE))
    assert cfg.clusters == ("A", "B")
    assert cfg.bootstrap_servers["A"] == "A_host1:9092, A_host2:9092, A_host3:9092"
    assert [f.name for f in cfg.replication_flows] == ["A->B", "B->A"]
    ab = cfg.flow("A", "B")
    assert ab.replication_factor == 1
    assert ab.checkpoints_topic_replication_factor == 1
    assert ab.heartbeats_topic_replication_factor == 1
    assert ab.offset_syncs_topic_replication_factor == 1
    assert ab.topic_filter.matches("orders")
    assert not ab.topic_filter.matches("__consumer_offsets")  # the include replaced, not exclude
    assert ab.offset_syncs_topic == "mm2-offset-syncs.B.internal"
    assert ab.checkpoints_topic == "A.checkpoints.internal"
    assert ab.policy.format_remote_topic("A", "orders") == "A.orders"
    # Connect worker settings are logged once, not refused.
    unused = [r.getMessage() for r in caplog.records if "does not use" in r.getMessage()]
    assert len(unused) == 1
    assert "offset.storage.replication.factor" in unused[0]
    assert cfg.client_config("A", "producer") == {
        "bootstrap.servers": "A_host1:9092, A_host2:9092, A_host3:9092"
    }


def test_mm2_defaults() -> None:
    flow = config().flow("east", "west")
    assert flow.enabled
    assert flow.refresh_topics_interval_s == 600
    assert flow.refresh_groups_interval_s == 600
    assert flow.sync_topic_configs_interval_s == 600
    assert flow.sync_topic_acls_interval_s == 600
    assert flow.emit_checkpoints_interval_s == 60
    assert flow.emit_heartbeats_interval_s == 1
    assert flow.sync_group_offsets_interval_s is None  # sync.group.offsets.enabled=false
    assert flow.offset_syncs_topic_location == "source"
    assert flow.offset_lag_max == 100
    assert flow.replication_factor == 2
    assert flow.offset_syncs_topic_replication_factor == 3
    assert flow.policy.name == "DefaultReplicationPolicy"
    assert flow.group_filter.matches("billing")
    assert not flow.group_filter.matches("console-consumer-1")


def test_flow_runs_heartbeats_only_unless_enabled() -> None:
    cfg = config()
    back = cfg.flow("west", "east")  # no west->east.enabled: heartbeats only, as in MM2
    assert not back.enabled
    assert back.emit_heartbeats_interval_s == 1
    assert [f.name for f in cfg.replication_flows] == ["east->west"]
    quiet = config(**{"emit.heartbeats.enabled": "false"})
    assert [f.name for f in quiet.flows] == ["east->west"]


def test_flow_setting_beats_top_level_beats_default() -> None:
    cfg = config(
        **{
            "west->east.enabled": "true",
            "emit.checkpoints.interval.seconds": "30",
            "east->west.emit.checkpoints.interval.seconds": "5",
            "topics": "orders.*",
            "east->west.topics.exclude": "orders-tmp",
        }
    )
    ew, we = cfg.flow("east", "west"), cfg.flow("west", "east")
    assert ew.emit_checkpoints_interval_s == 5
    assert we.emit_checkpoints_interval_s == 30
    assert ew.topic_filter.matches("orders") and not ew.topic_filter.matches("orders-tmp")
    assert we.topic_filter.matches("orders-tmp") and not we.topic_filter.matches("payments")
    assert ew.settings == {
        "enabled": "true",
        "emit.checkpoints.interval.seconds": "5",
        "topics.exclude": "orders-tmp",
    }


def test_policy_short_and_qualified_names_and_separator() -> None:
    ident = config(**{"replication.policy.class": "IdentityReplicationPolicy"})
    assert isinstance(ident.flow("east", "west").policy, IdentityReplicationPolicy)
    assert ident.flow("east", "west").policy.topic_source("orders") == "east"
    qualified = config(
        **{
            "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
            "replication.policy.separator": "_",
        }
    )
    assert qualified.flow("east", "west").policy.format_remote_topic("east", "o") == "east_o"
    assert qualified.flow("east", "west").offset_syncs_topic == "mm2-offset-syncs_west_internal"


def test_negative_interval_disables_the_task() -> None:
    flow = config(**{"refresh.groups.interval.seconds": "-1"}).flow("east", "west")
    assert flow.refresh_groups_interval_s is None


def test_offset_syncs_on_target() -> None:
    flow = config(**{"offset-syncs.topic.location": "target"}).flow("east", "west")
    assert flow.offset_syncs_cluster == "west"
    assert flow.offset_syncs_topic == "mm2-offset-syncs.east.internal"


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"east->west.enabled": "yes"}, "east->west.enabled"),
        ({"sync.topic.configs.enabled": "1"}, "sync.topic.configs.enabled"),
        ({"east->west.refresh.topics.interval.seconds": "ten"}, "east->west.refresh.topics"),
        ({"emit.heartbeats.interval.seconds": "0"}, "emit.heartbeats.interval.seconds"),
        ({"replication.factor": "0"}, "replication.factor"),
        ({"offset.lag.max": "-5"}, "offset.lag.max"),
        ({"offset-syncs.topic.location": "middle"}, "offset-syncs.topic.location"),
        ({"replication.policy.class": "com.acme.MyPolicy"}, "replication.policy.class"),
        ({"east->west.replication.policy.separator": ""}, "east->west.replication.policy"),
        ({"east->west.topics": "orders, ("}, "east->west.topics"),
        ({"groups.exclude": "["}, "groups.exclude"),
        ({"topics.blacklist": "x"}, "topics.blacklist"),
        ({"east->west.groups.blacklist": "x"}, "east->west.groups.blacklist"),
        ({"east->north.enabled": "true"}, "east->north.enabled"),
        ({"east->east.enabled": "true"}, "east->east.enabled"),
    ],
)
def test_every_refusal_names_its_key(extra: dict[str, str], key: str) -> None:
    assert refused({**BASE, **extra}).startswith(key)


def test_missing_clusters_and_bootstrap_are_refused_by_key() -> None:
    assert refused({"east.bootstrap.servers": "e:1"}).startswith("clusters:")
    props = dict(BASE)
    del props["west.bootstrap.servers"]
    assert refused(props).startswith("west.bootstrap.servers:")


def test_clusters_option_keeps_flows_into_those_targets() -> None:
    props = {**BASE, "west->east.enabled": "true"}
    cfg = MirrorConfig.from_properties(props, clusters=["east"])
    assert [f.name for f in cfg.flows] == ["west->east"]
    assert refused(props, ["north"]).startswith("--clusters: unknown cluster alias 'north'")


def test_opposite_identity_flows_are_refused_as_a_loop() -> None:
    message = refused(
        {
            **BASE,
            "west->east.enabled": "true",
            "replication.policy.class": "IdentityReplicationPolicy",
        }
    )
    assert message.startswith("replication.policy.class:")
    assert "loop" in message


def test_client_config_precedence_role_then_cluster_then_top_level() -> None:
    cfg = config(
        **{
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "east.sasl.mechanism": "SCRAM-SHA-256",
            "east.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            'required username="mirror" password="s3cr;et";',
            "east.ssl.truststore.type": "PEM",
            "east.ssl.truststore.location": "/etc/ca.pem",
            "east.producer.acks": "all",
            "east.consumer.sasl.mechanism": "SCRAM-SHA-512",
        }
    )
    assert cfg.client_config("east", "producer") == {
        "bootstrap.servers": "east:9092",
        "security.protocol": "sasl_ssl",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "mirror",
        "sasl.password": "s3cr;et",
        "ssl.ca.location": "/etc/ca.pem",
        "acks": "all",
    }
    assert cfg.client_config("east", "consumer")["sasl.mechanism"] == "SCRAM-SHA-512"
    assert "acks" not in cfg.client_config("east", "admin")
    assert cfg.client_config("west", "admin") == {
        "bootstrap.servers": "west:9092",
        "security.protocol": "sasl_ssl",
        "sasl.mechanism": "PLAIN",
    }


def test_keystores_translate_to_librdkafka() -> None:
    cfg = config(
        **{
            "west.security.protocol": "SSL",
            "west.ssl.keystore.type": "PKCS12",
            "west.ssl.keystore.location": "/k.p12",
            "west.ssl.keystore.password": "pw",
            "west.ssl.endpoint.identification.algorithm": "",
        }
    )
    assert cfg.client_config("west", "consumer") == {
        "bootstrap.servers": "west:9092",
        "security.protocol": "ssl",
        "ssl.keystore.location": "/k.p12",
        "ssl.keystore.password": "pw",
        "ssl.endpoint.identification.algorithm": "none",
    }


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"east.ssl.truststore.location": "/ts.jks"}, "east.ssl.truststore.location"),
        ({"east.ssl.keystore.location": "/ks.jks"}, "east.ssl.keystore.location"),
        ({"east.ssl.protocol": "TLSv1.2"}, "east.ssl.protocol"),
        ({"ssl.enabled.protocols": "TLSv1.2"}, "ssl.enabled.protocols"),
        ({"east.security.protocol": "TLS"}, "east.security.protocol"),
        (
            {
                "west.consumer.sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
                "OAuthBearerLoginModule required;"
            },
            "west.consumer.sasl.jaas.config",
        ),
        (
            {
                "east.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule"
                ' required username="u";'
            },
            "east.sasl.jaas.config",
        ),
        ({"east.producer.key.serializer": "x.Y"}, "east.producer.key.serializer"),
    ],
)
def test_untranslatable_client_settings_are_refused_by_key(extra: dict[str, str], key: str) -> None:
    assert refused({**BASE, **extra}).startswith(key + ":")
