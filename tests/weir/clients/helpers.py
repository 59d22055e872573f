"""Client-neutral plumbing for the client compatibility tests.

Every Kafka client in the venv (confluent-kafka, kafka-python, aiokafka) plus kcat gets the
same two verbs: ``produce_<client>(bootstrap, topic, records, codec=...)`` returns the
offsets the client was told, and ``consume_<client>(bootstrap, topic, count)`` returns
``(offset, Rec)`` pairs read with manual assignment (Weir has no consumer groups yet). A
``Rec`` is what every client can express: key, value, headers and a CreateTime timestamp.

``stored_batches`` reads the partition's segment files directly, so tests can prove what
reached the disk (codec bits, producer ids, sequences) rather than only what a client
decoded.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AIOTopicPartition
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from weir.protocol.records import BatchHeader, iter_batches

with warnings.catch_warnings():
    # kafka-python 3.0 loads its JSON message schemas at import time through
    # importlib.resources.read_text, which Python 3.11 deprecates; the suite turns
    # warnings into errors, so the import itself is shielded (nothing else is).
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka
    import kafka.admin  # the admin client's schemas load on import too
    import kafka.coordinator.assignors.roundrobin
    import kafka.coordinator.assignors.sticky.sticky_assignor

__all__ = [
    "CODECS",
    "CODEC_IDS",
    "KCAT",
    "Rec",
    "closed_by_peer",
    "consume_aiokafka",
    "consume_confluent",
    "consume_kafka_python",
    "consume_kcat",
    "create_topic",
    "kafka",
    "make_records",
    "produce_aiokafka",
    "produce_confluent",
    "produce_kafka_python",
    "produce_kcat",
    "recv_exact",
    "stored_batches",
]

KCAT = "/usr/bin/kcat"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# Bits 0-2 of a v2 batch's attributes.
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CONSUME_DEADLINE_S = 30.0

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class Rec:
    """One record as every client can write and read it (CreateTime timestamp in ms)."""

    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int


def make_records(
    writer: str,
    count: int,
    *,
    base_timestamp: int = 1_700_000_000_000,
    headers: Headers | None = None,
    null_keys: bool = True,
    tombstones: bool = True,
) -> list[Rec]:
    """Compressible, ASCII-only records (kcat reads and writes text lines).

    Every 10th key is null and every 25th value a tombstone unless disabled; headers are
    ``writer`` plus a per-record ``i`` unless fixed ``headers`` are given (kcat's -H).
    """
    records = []
    for i in range(count):
        key = None if null_keys and i % 10 == 9 else f"{writer}-key-{i % 7}".encode()
        value = None if tombstones and i % 25 == 12 else f"{writer} value {i} ".encode() * 8
        rec_headers = headers if headers is not None else (("writer", writer.encode()),)
        if headers is None:
            rec_headers = (*rec_headers, ("i", str(i).encode()))
        records.append(Rec(key, value, rec_headers, base_timestamp + i))
    return records


def create_topic(bootstrap: str, name: str, partitions: int = 1, **config: str) -> str:
    """Create topic ``name`` (replication factor 1); the name."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config)]
    )
    futures[name].result(15)
    return name


def stored_batches(data_dir: Path, topic: str, partition: int = 0) -> list[BatchHeader]:
    """Headers of every batch in the partition's segment files, CRC-checked, in order."""
    directory = data_dir / f"{topic}-{partition}"
    headers: list[BatchHeader] = []
    for path in sorted(directory.glob("*.log")):
        headers += [header for _, header in iter_batches(path.read_bytes())]
    return headers


def _receive(count: int, poll: Callable[[], list[tuple[int, Rec]]]) -> list[tuple[int, Rec]]:
    """Call ``poll`` (one client's half-second poll) until ``count`` records came back or
    ``CONSUME_DEADLINE_S`` passed; the caller asserts on what arrived."""
    received: list[tuple[int, Rec]] = []
    deadline = time.monotonic() + CONSUME_DEADLINE_S
    while len(received) < count and time.monotonic() < deadline:
        received += poll()
    return received


# --- confluent-kafka (librdkafka) ----------------------------------------------------------


def produce_confluent(
    bootstrap: str,
    topic: str,
    records: Sequence[Rec],
    *,
    codec: str = "none",
    partition: int = 0,
    **config: object,
) -> list[int]:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "linger.ms": 5,
            **{k.replace("_", "."): v for k, v in config.items()},
        }
    )
    offsets: dict[int, int] = {}
    errors: list[object] = []

    def delivered(index: int) -> Callable[[object, object], None]:
        def callback(err: object, msg: object) -> None:
            if err is not None:
                errors.append(err)
            else:
                offsets[index] = msg.offset()  # type: ignore[attr-defined]

        return callback

    for index, rec in enumerate(records):
        producer.produce(
            topic,
            value=rec.value,
            key=rec.key,
            partition=partition,
            headers=list(rec.headers),
            timestamp=rec.timestamp,
            on_delivery=delivered(index),
        )
    assert producer.flush(20) == 0
    assert not errors, errors
    return [offsets[i] for i in range(len(records))]


def _confluent_rec(message: object) -> tuple[int, Rec]:
    headers = tuple(message.headers() or ())  # type: ignore[attr-defined]
    _, timestamp = message.timestamp()  # type: ignore[attr-defined]
    return message.offset(), Rec(message.key(), message.value(), headers, timestamp)  # type: ignore[attr-defined]


def consume_confluent(
    bootstrap: str, topic: str, count: int, *, partition: int = 0, start: int = 0
) -> list[tuple[int, Rec]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, partition, start)])

        def poll() -> list[tuple[int, Rec]]:
            messages = consumer.consume(num_messages=1000, timeout=0.5)
            for message in messages:
                assert message.error() is None, message.error()
            return [_confluent_rec(message) for message in messages]

        return _receive(count, poll)
    finally:
        consumer.close()


# --- kafka-python --------------------------------------------------------------------------


def _python_producer_config(bootstrap: str, codec: str, config: dict[str, object]) -> dict:
    """kafka-python's and aiokafka's producers take the same keyword arguments."""
    return {
        "bootstrap_servers": bootstrap,
        "compression_type": None if codec == "none" else codec,
        "linger_ms": 5,
        **config,
    }


def _python_send_args(rec: Rec, partition: int) -> dict[str, object]:
    """The keyword arguments of kafka-python's and aiokafka's ``send`` for one record."""
    return {
        "key": rec.key,
        "value": rec.value,
        "headers": list(rec.headers),
        "timestamp_ms": rec.timestamp,
        "partition": partition,
    }


def _python_rec(m: object) -> tuple[int, Rec]:
    """kafka-python's and aiokafka's ConsumerRecord share one shape."""
    assert m.timestamp_type == 0  # type: ignore[attr-defined]  # CreateTime
    return m.offset, Rec(m.key, m.value, tuple(m.headers), m.timestamp)  # type: ignore[attr-defined]


def produce_kafka_python(
    bootstrap: str,
    topic: str,
    records: Sequence[Rec],
    *,
    codec: str = "none",
    partition: int = 0,
    **config: object,
) -> list[int]:
    producer = kafka.KafkaProducer(**_python_producer_config(bootstrap, codec, config))
    try:
        futures = [producer.send(topic, **_python_send_args(rec, partition)) for rec in records]
        producer.flush(20)
        return [future.get(10).offset for future in futures]
    finally:
        producer.close(timeout=10)


def kafka_python_consumer(bootstrap: str, **config: object) -> kafka.KafkaConsumer:
    return kafka.KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        **config,
    )


def consume_kafka_python(
    bootstrap: str, topic: str, count: int, *, partition: int = 0, start: int = 0
) -> list[tuple[int, Rec]]:
    consumer = kafka_python_consumer(bootstrap)
    try:
        tp = kafka.TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, start)

        def poll() -> list[tuple[int, Rec]]:
            batches = consumer.poll(timeout_ms=500).values()
            return [_python_rec(m) for batch in batches for m in batch]

        return _receive(count, poll)
    finally:
        consumer.close()


# --- aiokafka ------------------------------------------------------------------------------


async def produce_aiokafka_async(
    bootstrap: str,
    topic: str,
    records: Sequence[Rec],
    *,
    codec: str = "none",
    partition: int = 0,
    **config: object,
) -> list[int]:
    producer = AIOKafkaProducer(**_python_producer_config(bootstrap, codec, config))
    await producer.start()
    try:
        futures = [
            await producer.send(topic, **_python_send_args(rec, partition)) for rec in records
        ]
        metadata = await asyncio.wait_for(asyncio.gather(*futures), 20)
        return [m.offset for m in metadata]
    finally:
        await producer.stop()


def produce_aiokafka(
    bootstrap: str, topic: str, records: Sequence[Rec], **kwargs: object
) -> list[int]:
    return asyncio.run(produce_aiokafka_async(bootstrap, topic, records, **kwargs))  # type: ignore[arg-type]


async def consume_aiokafka_async(
    bootstrap: str, topic: str, count: int, *, partition: int = 0, start: int = 0
) -> list[tuple[int, Rec]]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    await consumer.start()
    try:
        tp = AIOTopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, start)
        received: list[tuple[int, Rec]] = []
        deadline = time.monotonic() + CONSUME_DEADLINE_S
        while len(received) < count and time.monotonic() < deadline:
            batches = (await consumer.getmany(timeout_ms=500)).values()
            received += [_python_rec(m) for batch in batches for m in batch]
        return received
    finally:
        await consumer.stop()


def consume_aiokafka(
    bootstrap: str, topic: str, count: int, *, partition: int = 0, start: int = 0
) -> list[tuple[int, Rec]]:
    return asyncio.run(
        consume_aiokafka_async(bootstrap, topic, count, partition=partition, start=start)
    )


# --- raw sockets ---------------------------------------------------------------------------


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes from ``sock``; ConnectionError if the peer closes first."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the broker closed the connection (nothing more to read, or a reset)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


# --- kcat (librdkafka 2.0.2) ---------------------------------------------------------------


def run_kcat(args: Iterable[str], *, stdin: bytes = b"", timeout: float = 30.0) -> str:
    """Run kcat, fail with its stderr if it exits non-zero; its stdout."""
    proc = subprocess.run(
        [KCAT, *args], input=stdin, capture_output=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode(errors="replace"))
    return proc.stdout.decode()


def produce_kcat(
    bootstrap: str,
    topic: str,
    records: Sequence[Rec],
    *,
    codec: str = "none",
    partition: int = 0,
) -> None:
    """kcat -P: one ``key<TAB>value`` line per record; all records share their headers
    (kcat's -H is per invocation) and get the wall-clock CreateTime (kcat cannot set one)."""
    headers = {rec.headers for rec in records}
    assert len(headers) == 1, "kcat gives every record of a run the same headers"
    lines = []
    for rec in records:
        assert rec.key is not None and rec.value is not None, "kcat writes no nulls"
        assert b"\t" not in rec.key + rec.value and b"\n" not in rec.key + rec.value
        lines.append(rec.key + b"\t" + rec.value + b"\n")
    args = ["-b", bootstrap, "-t", topic, "-p", str(partition), "-P", "-K", "\t"]
    args += ["-X", "linger.ms=5"]
    if codec != "none":
        args += ["-z", codec]
    for name, value in headers.pop():
        args += ["-H", f"{name}={value.decode()}"]
    run_kcat(args, stdin=b"".join(lines))


def consume_kcat(
    bootstrap: str, topic: str, *, partition: int = 0, start: int | str = 0
) -> list[tuple[int, Rec]]:
    """kcat -C -e -J from ``start`` (an offset or kcat's -o syntax) to the end."""
    args = ["-b", bootstrap, "-t", topic, "-p", str(partition), "-o", str(start)]
    out = run_kcat([*args, "-C", "-e", "-J", "-q"])
    received = []
    for line in out.splitlines():
        doc = json.loads(line)
        assert doc["tstype"] == "create", doc
        flat = doc.get("headers") or []
        headers = tuple(
            (flat[i], None if flat[i + 1] is None else flat[i + 1].encode())
            for i in range(0, len(flat), 2)
        )
        key = None if doc["key"] is None else doc["key"].encode()
        value = None if doc["payload"] is None else doc["payload"].encode()
        received.append((doc["offset"], Rec(key, value, headers, doc["ts"])))  # type: ignore[arg-type]
    return received
