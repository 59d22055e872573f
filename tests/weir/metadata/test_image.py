"""ClusterImage.apply is pure: records in, new image out, no Redis needed."""

from __future__ import annotations

import uuid

import pytest

from weir.metadata.image import (
    BrokerImage,
    ClusterImage,
    ControllerLease,
    ImageDiff,
    PartitionImage,
    TopicImage,
)
from weir.metadata.records import (
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnknownRecordError,
    UnregisterBrokerRecord,
    record_from_fields,
)

TOPIC_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")


def created(name: str = "t", topic_id: uuid.UUID = TOPIC_ID, partitions: int = 2) -> list:
    records: list = [TopicRecord(name=name, topic_id=topic_id)]
    records += [
        PartitionRecord(topic_id=topic_id, partition=p, replicas=(1, 2), isr=(1, 2), leader=1)
        for p in range(partitions)
    ]
    return records


def test_records_round_trip_through_stream_fields() -> None:
    records = [
        *created(),
        PartitionChangeRecord(
            topic_id=TOPIC_ID, partition=0, leader_epoch=1, partition_epoch=1, leader=2, isr=(2,)
        ),
        RemoveTopicRecord(name="t", topic_id=TOPIC_ID),
        ConfigRecord("broker", "", "log.retention.ms", None),
        RegisterBrokerRecord(broker_id=1, epoch=3, host="h", port=9092, rack="r1"),
        UnregisterBrokerRecord(broker_id=1, epoch=3),
    ]
    for record in records:
        fields = record.to_fields()
        assert record_from_fields(fields) == record
        as_bytes = {k.encode(): v.encode() for k, v in fields.items()}
        assert type(record).from_fields(as_bytes) == record


@pytest.mark.parametrize(
    "fields",
    [
        {"type": "Nope", "data": "{}"},
        {"type": "Topic"},
        {"type": "Topic", "data": "[]"},
        {"type": "Topic", "data": '{"name": "t"}'},
    ],
)
def test_unreadable_entries_raise_unknown_record(fields: dict[str, str]) -> None:
    with pytest.raises(UnknownRecordError):
        record_from_fields(fields)


def test_apply_creates_a_topic_with_its_partitions() -> None:
    image = ClusterImage().apply(created(partitions=3), stream_id="5-0")
    assert image.stream_id == "5-0"
    topic = image.topics["t"]
    assert topic.topic_id == TOPIC_ID and image.topics_by_id[TOPIC_ID] is topic
    assert sorted(topic.partitions) == [0, 1, 2]
    assert topic.partitions[2] == PartitionImage(partition=2, replicas=(1, 2), isr=(1, 2), leader=1)


def test_apply_does_not_touch_the_old_image() -> None:
    empty = ClusterImage()
    image = empty.apply(created())
    assert not empty.topics and "t" in image.topics
    with pytest.raises(TypeError):
        image.topics["x"] = image.topics["t"]  # type: ignore[index]


def test_partition_change_updates_only_given_fields() -> None:
    image = ClusterImage().apply(created())
    image = image.apply(
        [
            PartitionChangeRecord(
                topic_id=TOPIC_ID,
                partition=1,
                leader_epoch=4,
                partition_epoch=7,
                isr=(2,),
                leader=2,
                adding_replicas=(3,),
            )
        ]
    )
    part = image.topics["t"].partitions[1]
    assert (part.leader, part.isr, part.replicas) == (2, (2,), (1, 2))
    assert (part.leader_epoch, part.partition_epoch, part.adding_replicas) == (4, 7, (3,))
    assert image.topics["t"].partitions[0].leader == 1


def test_remove_topic_drops_it_and_its_configs() -> None:
    image = ClusterImage().apply([*created(), ConfigRecord("topic", "t", "retention.ms", "1")])
    assert dict(image.topic_config("t")) == {"retention.ms": "1"}
    image = image.apply([RemoveTopicRecord(name="t", topic_id=TOPIC_ID)])
    assert "t" not in image.topics and TOPIC_ID not in image.topics_by_id
    assert dict(image.topic_config("t")) == {}


def test_recreating_a_name_gives_a_new_topic() -> None:
    other = uuid.uuid4()
    image = ClusterImage().apply(created())
    image = image.apply([RemoveTopicRecord(name="t", topic_id=TOPIC_ID), *created("t", other, 1)])
    assert image.topics["t"].topic_id == other
    assert sorted(image.topics["t"].partitions) == [0]
    assert TOPIC_ID not in image.topics_by_id


def test_config_records_set_and_delete_overrides() -> None:
    image = ClusterImage().apply(
        [
            ConfigRecord("broker", "", "log.retention.ms", "1"),
            ConfigRecord("broker", "2", "message.max.bytes", "5"),
            ConfigRecord("broker", "", "log.retention.ms", "2"),
        ]
    )
    assert dict(image.broker_config("")) == {"log.retention.ms": "2"}
    assert dict(image.broker_config(2)) == {"message.max.bytes": "5"}
    image = image.apply([ConfigRecord("broker", "2", "message.max.bytes", None)])
    assert "2" not in image.broker_configs


def test_broker_registrations_and_liveness() -> None:
    image = ClusterImage().apply(
        [
            RegisterBrokerRecord(broker_id=1, epoch=1, host="a", port=1),
            RegisterBrokerRecord(broker_id=2, epoch=2, host="b", port=2, rack="r"),
        ]
    )
    assert sorted(image.registrations) == [1, 2]
    assert dict(image.brokers) == {}  # nobody holds a lease yet
    image = image.with_liveness([2], ControllerLease(2, 9))
    assert dict(image.brokers) == {2: BrokerImage(2, 2, "b", 2, "r")}
    assert image.controller_id == 2
    assert image.with_liveness([2], ControllerLease(2, 9)) is image
    # an old epoch's unregister does not remove a newer registration
    image = image.apply([RegisterBrokerRecord(broker_id=1, epoch=5, host="a2", port=1)])
    image = image.apply([UnregisterBrokerRecord(broker_id=1, epoch=1)])
    assert image.registrations[1].host == "a2"
    image = image.apply([UnregisterBrokerRecord(broker_id=1, epoch=5)])
    assert 1 not in image.registrations


def test_records_for_unknown_topics_are_ignored() -> None:
    image = ClusterImage().apply(
        [
            PartitionRecord(topic_id=uuid.uuid4(), partition=0, replicas=(1,), isr=(1,), leader=1),
            PartitionChangeRecord(
                topic_id=TOPIC_ID, partition=0, leader_epoch=1, partition_epoch=1
            ),
        ]
    )
    assert not image.topics


def test_topic_json_round_trips_and_accepts_lua_empty_lists() -> None:
    topic = ClusterImage().apply(created()).topics["t"]
    assert TopicImage.from_json("t", topic.to_json()) == topic
    partition = '{"partition":0,"replicas":[1],"isr":[1],"leader":1,"adding_replicas":{}}'
    lua = f'{{"topic_id":"{TOPIC_ID}","partitions":[{partition}]}}'
    assert TopicImage.from_json("t", lua).partitions[0].adding_replicas == ()


def test_image_diff_names_what_changed() -> None:
    old = ClusterImage(incarnation="a").apply([*created("keep"), *created("gone", uuid.uuid4())])
    new = old.apply(
        [
            RemoveTopicRecord(name="gone", topic_id=old.topics["gone"].topic_id),
            *created("new", uuid.uuid4()),
            PartitionChangeRecord(
                topic_id=TOPIC_ID, partition=0, leader_epoch=1, partition_epoch=1, leader=2
            ),
            ConfigRecord("topic", "keep", "retention.ms", "1"),
        ]
    )
    diff = ImageDiff.between(old, new)
    assert diff.created_topics == {"new"}
    assert diff.deleted_topics == {"gone"}
    assert diff.changed_topics == {"keep"}
    assert diff.changed_topic_configs == {"keep"}
    assert not diff.brokers_changed and not diff.reset
    from dataclasses import replace

    assert ImageDiff.between(old, replace(new, incarnation="b")).reset
