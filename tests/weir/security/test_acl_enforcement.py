"""ACLs are enforced on the data plane and topic admin: a real broker with the authorizer on
(``super.users=User:alice``), clients over SASL_PLAINTEXT SCRAM as ``alice`` (super user,
writes the ACLs) and ``bob`` (normal user, sees only what his ACLs allow)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.weir.security.conftest import SaslBroker, sasl_conf
from tests.weir.security.round_trips import kafka_python_conf


def _conf(broker: SaslBroker, user: str) -> dict[str, Any]:
    return sasl_conf(broker.sasl, user)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create_topic(broker: SaslBroker, name: str) -> None:
    admin = AdminClient(_conf(broker, "alice"))
    for future in admin.create_topics([NewTopic(name, 1, 1)]).values():
        future.result(timeout=10)


def _grant(
    broker: SaslBroker,
    rtype: ResourceType,
    name: str,
    *ops: AclOperation,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
    permission: AclPermissionType = AclPermissionType.ALLOW,
) -> None:
    admin = AdminClient(_conf(broker, "alice"))
    bindings = [AclBinding(rtype, name, pattern, "User:bob", "*", op, permission) for op in ops]
    for future in admin.create_acls(bindings).values():
        future.result(timeout=10)


def _produce_error(broker: SaslBroker, topic: str) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    producer = Producer(
        {**_conf(broker, "bob"), "enable.idempotence": False, "message.timeout.ms": 5000}
    )
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(10)
    assert errors, "no delivery report"
    return errors[0]


def _consume(broker: SaslBroker, topic: str, group: str) -> Any:
    consumer = Consumer(
        {
            **_conf(broker, "bob"),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        for _ in range(20):
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                return msg.error()
            return msg.value()
        return None
    finally:
        consumer.close()


def test_produce_without_write_acl_is_topic_authorization_failed(acl_broker: SaslBroker) -> None:
    topic = _name("noprod")
    _create_topic(acl_broker, topic)
    _grant(acl_broker, ResourceType.TOPIC, topic, AclOperation.DESCRIBE)
    error = _produce_error(acl_broker, topic)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_produce_with_write_and_describe_succeeds(acl_broker: SaslBroker) -> None:
    topic = _name("prod")
    _create_topic(acl_broker, topic)
    _grant(acl_broker, ResourceType.TOPIC, topic, AclOperation.WRITE, AclOperation.DESCRIBE)
    assert _produce_error(acl_broker, topic) is None


def test_prefixed_acl_grants_write(acl_broker: SaslBroker) -> None:
    prefix = _name("pfx")
    topic = f"{prefix}.orders"
    _create_topic(acl_broker, topic)
    _grant(
        acl_broker,
        ResourceType.TOPIC,
        prefix,
        AclOperation.WRITE,
        pattern=ResourcePatternType.PREFIXED,
    )
    assert _produce_error(acl_broker, topic) is None


def test_deny_beats_allow(acl_broker: SaslBroker) -> None:
    topic = _name("deny")
    _create_topic(acl_broker, topic)
    _grant(acl_broker, ResourceType.TOPIC, topic, AclOperation.ALL)
    _grant(
        acl_broker, ResourceType.TOPIC, topic, AclOperation.WRITE, permission=AclPermissionType.DENY
    )
    error = _produce_error(acl_broker, topic)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_consume_needs_read_on_group_and_topic(acl_broker: SaslBroker) -> None:
    topic, group = _name("cons"), _name("grp")
    _create_topic(acl_broker, topic)
    producer = Producer(_conf(acl_broker, "alice"))
    producer.produce(topic, b"hello")
    producer.flush(10)
    _grant(acl_broker, ResourceType.TOPIC, topic, AclOperation.DESCRIBE)
    error = _consume(acl_broker, topic, group)
    assert isinstance(error, KafkaError) and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    _grant(acl_broker, ResourceType.GROUP, group, AclOperation.READ)
    error = _consume(acl_broker, topic, group)
    assert isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(acl_broker, ResourceType.TOPIC, topic, AclOperation.READ)
    assert _consume(acl_broker, topic, group) == b"hello"


def test_metadata_lists_only_describable_topics(acl_broker: SaslBroker) -> None:
    visible, hidden = _name("vis"), _name("hid")
    _create_topic(acl_broker, visible)
    _create_topic(acl_broker, hidden)
    _grant(acl_broker, ResourceType.TOPIC, visible, AclOperation.DESCRIBE)
    admin = AdminClient(_conf(acl_broker, "bob"))
    topics = admin.list_topics(timeout=10).topics
    assert visible in topics
    assert hidden not in topics
    named = admin.list_topics(topic=hidden, timeout=10).topics[hidden]
    assert named.error is not None
    assert named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_create_topics_needs_create(acl_broker: SaslBroker) -> None:
    admin = AdminClient(_conf(acl_broker, "bob"))
    denied, allowed = _name("nocreate"), _name("create")
    with pytest.raises(KafkaException) as info:
        admin.create_topics([NewTopic(denied, 1, 1)])[denied].result(timeout=10)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(acl_broker, ResourceType.TOPIC, allowed, AclOperation.CREATE)
    admin.create_topics([NewTopic(allowed, 1, 1)])[allowed].result(timeout=10)


def test_delete_topics_needs_delete(acl_broker: SaslBroker) -> None:
    topic = _name("del")
    _create_topic(acl_broker, topic)
    admin = AdminClient(_conf(acl_broker, "bob"))
    with pytest.raises(KafkaException) as info:
        admin.delete_topics([topic])[topic].result(timeout=10)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(acl_broker, ResourceType.TOPIC, topic, AclOperation.DELETE)
    admin.delete_topics([topic])[topic].result(timeout=10)


def test_describe_configs_needs_describe_configs(acl_broker: SaslBroker) -> None:
    topic = _name("cfg")
    _create_topic(acl_broker, topic)
    admin = AdminClient(_conf(acl_broker, "bob"))
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    with pytest.raises(KafkaException) as info:
        admin.describe_configs([resource])[resource].result(timeout=10)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(acl_broker, ResourceType.TOPIC, topic, AclOperation.DESCRIBE_CONFIGS)
    assert admin.describe_configs([resource])[resource].result(timeout=10)


# kafka-python's SCRAM module calls importlib.resources.read_text (deprecated).
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_kafka_python_producer_is_denied_without_write(acl_broker: SaslBroker) -> None:
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

    topic = _name("kp")
    _create_topic(acl_broker, topic)
    _grant(acl_broker, ResourceType.TOPIC, topic, AclOperation.DESCRIBE)
    producer = KafkaProducer(**kafka_python_conf(_conf(acl_broker, "bob")), retries=0)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(topic, b"v").get(timeout=10)
    finally:
        producer.close(timeout=5)


def test_delete_groups_needs_delete_on_group(acl_broker: SaslBroker) -> None:
    group = _name("delgrp")
    admin = AdminClient(_conf(acl_broker, "bob"))
    with pytest.raises(KafkaException) as info:
        admin.delete_consumer_groups([group])[group].result(timeout=10)
    assert info.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_anonymous_plaintext_client_is_not_a_super_user(acl_broker: SaslBroker) -> None:
    topic = _name("anon")
    _create_topic(acl_broker, topic)
    errors: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": acl_broker.plaintext, "message.timeout.ms": 5000})
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(10)
    assert errors and errors[0] is not None
    assert errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_authorized_operations_report_what_the_principal_may_do(acl_broker: SaslBroker) -> None:
    topic = _name("ops")
    group = _name("ops-group")
    _create_topic(acl_broker, topic)
    _grant(acl_broker, ResourceType.TOPIC, topic, AclOperation.WRITE)
    _grant(acl_broker, ResourceType.GROUP, group, AclOperation.READ)
    # confluent-kafka names the cluster resource type (4) BROKER.
    _grant(acl_broker, ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE)
    bob = AdminClient(_conf(acl_broker, "bob"))
    alice = AdminClient(_conf(acl_broker, "alice"))

    def topic_ops(admin: AdminClient) -> set[AclOperation]:
        futures = admin.describe_topics(
            TopicCollection([topic]), include_authorized_operations=True
        )
        return set(futures[topic].result(timeout=10).authorized_operations)

    # Write implies Describe; nothing else was granted.
    assert topic_ops(bob) == {AclOperation.WRITE, AclOperation.DESCRIBE}
    assert topic_ops(alice) == {
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    }
    cluster = bob.describe_cluster(include_authorized_operations=True).result(timeout=10)
    assert set(cluster.authorized_operations) == {AclOperation.DESCRIBE}
    (described,) = bob.describe_consumer_groups(
        [group], include_authorized_operations=True
    ).values()
    assert set(described.result(timeout=10).authorized_operations) == {
        AclOperation.READ,
        AclOperation.DESCRIBE,
    }
    # Not asked for: the field stays "omitted" (the client reports None).
    plain = bob.describe_cluster().result(timeout=10)
    assert plain.authorized_operations is None
