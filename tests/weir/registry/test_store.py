"""The registry stored in a real cluster: ``KafkaStore`` instances ("web processes") over an
in-process Weir broker and the suite's real Redis. Proves ids are allocated once across
processes, writes reach every process, nothing is lost when every process closes, the
writer lease moves, and a writer that lost its lease is fenced."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import redis
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.weir.inprocess import ThreadedBroker, threaded_broker
from weir.registry.errors import RegistryError
from weir.registry.records import SchemaRecord
from weir.registry.service import SchemaRegistry
from weir.registry.store import SCHEMAS_TOPIC, KafkaStore

WAIT_S = 10.0  # generous on a loaded 2-core machine; never the point of an assertion


def schema(name: str) -> str:
    return json.dumps({"type": "record", "name": name, "fields": [{"name": "a", "type": "int"}]})


@pytest.fixture
def broker(redis_server: str, tmp_path: Path) -> Iterator[ThreadedBroker]:
    with threaded_broker(data_dir=tmp_path / "broker-1", redis_url=redis_server) as b:
        yield b


@pytest.fixture
def redis_client(redis_server: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server)
    yield client
    client.close()


@pytest.fixture
def stores(broker: ThreadedBroker, redis_client: redis.Redis) -> Iterator[ExitStack]:
    """Open stores with ``stack.enter_context(make(...))``; all are closed after the test."""
    with ExitStack() as stack:
        yield stack


def new_store(broker: ThreadedBroker, redis_client: redis.Redis, **kwargs: object) -> KafkaStore:
    return KafkaStore(
        {"bootstrap.servers": broker.bootstrap},
        redis_client,
        broker.cluster_id,
        timeout_s=WAIT_S,
        **kwargs,  # type: ignore[arg-type]
    )


def topic_records(broker: ThreadedBroker) -> list[tuple[bytes, bytes | None]]:
    """Every (key, value) in ``_schemas`` now, in offset order."""
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "t", "enable.auto.commit": False}
    )
    try:
        partition = TopicPartition(SCHEMAS_TOPIC, 0, 0)
        _, end = consumer.get_watermark_offsets(partition, timeout=WAIT_S)
        consumer.assign([partition])
        seen = []
        while not seen or seen[-1].offset() < end - 1:
            seen += [m for m in consumer.consume(100, timeout=0.2) if not m.error()]
    finally:
        consumer.close()
    return [(m.key(), m.value()) for m in seen]


def test_concurrent_registrations_on_two_processes_allocate_each_id_once(
    broker: ThreadedBroker, redis_client: redis.Redis, stores: ExitStack
) -> None:
    a = stores.enter_context(new_store(broker, redis_client))
    b = stores.enter_context(new_store(broker, redis_client))
    # Three request threads per process. Each registers schemas of its own (new ids, racing
    # the others for the next one) and the common ones (one id whoever registers first).
    common = [f"Common{i}" for i in range(4)]
    workers = [(label, store, n) for label, store in (("a", a), ("b", b)) for n in range(3)]
    results: list[tuple[str, int]] = []
    failures: list[BaseException] = []

    def run(label: str, store: KafkaStore, n: int) -> None:
        registry = SchemaRegistry(store)
        own = [f"Own_{label}{n}_{i}" for i in range(8)]
        try:
            for name in own[:4] + common + own[4:]:
                answer = registry.register(f"{label}{n}-{name}", schema(name))
                results.append((name, answer["id"]))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=worker) for worker in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert failures == []

    ids: dict[str, set[int]] = {}
    for name, schema_id in results:
        ids.setdefault(name, set()).add(schema_id)
    assert all(len(found) == 1 for found in ids.values()), ids  # one schema, one id
    allocated = sorted(next(iter(found)) for found in ids.values())
    assert allocated == list(range(1, len(ids) + 1))  # never shared, none skipped

    # Both processes end with the same registry.
    subjects = len(workers) * (8 + len(common))
    assert a.wait_until(lambda s: len(s.subject_names()) == subjects, WAIT_S)
    assert b.wait_until(lambda s: len(s.subject_names()) == subjects, WAIT_S)
    with a.read() as sa, b.read() as sb:
        assert sa.subjects == sb.subjects
        assert sa.schemas == sb.schemas


def test_schema_registered_on_one_process_reaches_the_other(
    broker: ThreadedBroker, redis_client: redis.Redis, stores: ExitStack
) -> None:
    a = stores.enter_context(new_store(broker, redis_client))
    b = stores.enter_context(new_store(broker, redis_client))
    assert SchemaRegistry(a).register("orders-value", schema("Order")) == {"id": 1}
    # The reader applies it within a fetch round trip; the wait only bounds a hang.
    assert b.wait_until(lambda s: 1 in s.schemas, WAIT_S)
    assert SchemaRegistry(b).version("orders-value", "latest")["id"] == 1
    # The writer answered only after its own reader had the record (read-your-writes).
    assert SchemaRegistry(a).versions("orders-value") == [1]


def test_closing_every_process_loses_nothing(
    broker: ThreadedBroker, redis_client: redis.Redis
) -> None:
    with new_store(broker, redis_client) as a, new_store(broker, redis_client) as b:
        ra, rb = SchemaRegistry(a), SchemaRegistry(b)
        ra.register("x", schema("X"))
        rb.register("y", schema("Y"))
        ra.register("gone", schema("G"))
        ra.delete_subject("gone")
        ra.delete_subject("gone", permanent=True)
        rb.set_config("x", "FULL")
        ra.set_mode("y", "READONLY")
        rb.register("z", schema("Z"))
        ra.delete_version("z", 1)
    with new_store(broker, redis_client) as c:
        rc = SchemaRegistry(c)
        assert rc.subjects() == ["x", "y"]
        assert rc.subjects(deleted=True) == ["x", "y", "z"]
        assert rc.version("x", 1)["id"] == 1
        assert rc.version("y", 1)["id"] == 2
        assert rc.get_config("x") == {"compatibilityLevel": "FULL"}
        assert rc.get_mode("y") == {"mode": "READONLY"}
        # Id 3 was hard-deleted, 4 soft: the next id is 5 all the same.
        assert rc.register("w", schema("W")) == {"id": 5}


def test_lease_moves_to_another_process_when_the_writer_closes(
    broker: ThreadedBroker, redis_client: redis.Redis, stores: ExitStack
) -> None:
    # A TTL far beyond the stores' timeout: B can only write if A gives the lease up.
    a = new_store(broker, redis_client, lease_ttl_ms=600_000).open()
    b = stores.enter_context(new_store(broker, redis_client, lease_ttl_ms=600_000))
    with a._write_lock:
        epoch_a = a._ensure_lease()  # A is the writer, as in the middle of a registration
    assert a.lease.holder() == (epoch_a, a.owner)
    a.close()
    assert a.lease.holder() is None
    assert SchemaRegistry(b).register("s", schema("S")) == {"id": 1}
    assert int(redis_client.get(b.lease.epoch_key) or 0) > epoch_a


def test_writer_that_lost_its_lease_is_fenced(
    broker: ThreadedBroker, redis_client: redis.Redis, stores: ExitStack
) -> None:
    # A's lease expires after a second (A stands for a process paused mid-write).
    a = stores.enter_context(
        new_store(broker, redis_client, lease_ttl_ms=1000, delivery_timeout_ms=400)
    )
    b = stores.enter_context(new_store(broker, redis_client))
    with a._write_lock:
        epoch_a = a._ensure_lease()
    # B waits for A's lease to expire, takes it, writes its marker and its schema.
    assert SchemaRegistry(b).register("s", schema("S")) == {"id": 1}
    assert not a.lease.renew(epoch_a)  # Redis refuses the old epoch
    # A wakes up and writes anyway, with its old epoch: every reader ignores the record.
    zombie = SchemaRecord("zombie", 1, 1, schema("Z"))
    with pytest.raises(RegistryError) as caught:
        a._write([zombie], epoch_a)
    assert caught.value.error_code == 50001
    # B's next write lands after the zombie record, so B's reader has been past it.
    assert SchemaRegistry(b).register("t", schema("T")) == {"id": 2}
    with b.read() as state:
        assert "zombie" not in state.subjects
    with new_store(broker, redis_client) as fresh, fresh.read() as state:
        assert "zombie" not in state.subjects
        assert state.schemas[1].schema == SchemaRegistry(b).version("s", 1)["schema"]
    # B's write also overwrote the zombie's key with what the registry holds there (nothing:
    # a tombstone), so compaction drops the zombie's record even after its marker is gone.
    key = b'{"keytype":"SCHEMA","subject":"zombie","version":1,"magic":1}'
    values = [value for k, value in topic_records(broker) if k == key]
    assert len(values) == 2 and values[-1] is None


def test_schemas_topic_is_compacted_and_protected_from_deletes(
    broker: ThreadedBroker, redis_client: redis.Redis, stores: ExitStack
) -> None:
    store = stores.enter_context(new_store(broker, redis_client))
    SchemaRegistry(store).register("s", schema("S"))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    described = admin.describe_configs([ConfigResource("topic", SCHEMAS_TOPIC)])
    configs = next(iter(described.values())).result(WAIT_S)
    assert configs["cleanup.policy"].value == "compact"
    future = admin.delete_topics([SCHEMAS_TOPIC], operation_timeout=WAIT_S)[SCHEMAS_TOPIC]
    with pytest.raises(KafkaException) as caught:
        future.result(WAIT_S)
    assert caught.value.args[0].code() == KafkaError.INVALID_REQUEST
    assert SCHEMAS_TOPIC in admin.list_topics(timeout=WAIT_S).topics


def test_records_on_the_topic_are_confluents_format(
    broker: ThreadedBroker, redis_client: redis.Redis, stores: ExitStack
) -> None:
    store = stores.enter_context(new_store(broker, redis_client))
    SchemaRegistry(store).register("orders-value", schema("Order"))
    records = topic_records(broker)
    key, raw = next((k, v) for k, v in records if b'"SCHEMA"' in k)
    assert key == b'{"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}'
    value = json.loads(raw or b"")
    assert value["id"] == 1 and value["deleted"] is False and "schemaType" not in value
