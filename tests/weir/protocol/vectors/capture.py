"""Capture request frames from real Kafka clients as protocol test vectors.

    .venv/bin/python tests/weir/protocol/vectors/capture.py [--out DIR] [--keep]

What it does
------------
1. Starts a private ``redis-server`` and one Weir broker (``manage.py runbroker``) whose
   advertised address is a recording TCP proxy, so every connection a client opens after
   bootstrap goes through the proxy too.
2. Drives confluent-kafka, kafka-python, aiokafka and kcat, one after the other, through
   the same workload against the proxy: admin (create topic with a config, add partitions,
   describe/alter configs, describe cluster), produce five keyed records with headers and
   fixed timestamps in every codec (plus an idempotent producer), consume with manual
   assignment, offsets by time and watermarks, delete records, delete the topic.
3. Saves the first client-to-broker frame of every (client, API key, version) as
   ``<client>_<api>_v<version>.bin`` (API names as kio spells them). Produce frames are
   kept per codec and producer kind as found in the batch itself:
   ``<client>_produce_v<version>_<codec>[_idempotent].bin``.

A ``.bin`` file is one frame exactly as it crossed the wire: the int32 size prefix, the
request header and the body. ``tests/weir/protocol/test_client_vectors.py`` decodes
them with the broker's codec. The constants below (topic names, records, timestamps) are
what that test asserts on; change both together. Frames are captured once and kept:
re-running replaces the files (different correlation ids, producer ids, ...).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from kio.schema.index import api_key_map  # noqa: E402

from weir.protocol.codec import decode_request  # noqa: E402
from weir.protocol.records import parse_header  # noqa: E402

CLIENTS = ("confluent_kafka", "kafka_python", "aiokafka", "kcat")
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_NAMES = dict(enumerate(CODECS))
BASE_TIMESTAMP = 1_700_000_000_000
RECORDS_PER_CODEC = 5
RETENTION_MS = "86400000"
DELETE_BEFORE = 2


def topic_for(client: str) -> str:
    return f"vec-{client.replace('_', '-')}"


def records_for(codec: str) -> list[tuple[bytes, bytes, list[tuple[str, bytes]], int]]:
    """(key, value, headers, timestamp) of the records produced in ``codec``."""
    return [
        (
            f"key-{i}".encode(),
            f"{codec} value {i} ".encode() * 4,
            [("h", str(i).encode())],
            BASE_TIMESTAMP + i,
        )
        for i in range(RECORDS_PER_CODEC)
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the recording proxy -------------------------------------------------------------------


class RecordingProxy:
    """Forwards TCP connections to the broker and keeps the first frame of each kind."""

    def __init__(self, listen_port: int, upstream_port: int) -> None:
        self.listen_port = listen_port
        self.upstream_port = upstream_port
        self.client = "none"
        self.frames: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", listen_port))
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closed = False

    def start(self) -> None:
        self._spawn(self._accept_loop)

    def close(self) -> None:
        self._closed = True
        self._server.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        thread.start()
        self._threads.append(thread)

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                downstream, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            self._sockets += [downstream, upstream]
            self._spawn(self._requests, downstream, upstream, self.client)
            self._spawn(self._responses, upstream, downstream)

    def _requests(self, source: socket.socket, sink: socket.socket, client: str) -> None:
        buffer = b""
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                sink.sendall(chunk)
                buffer += chunk
                while len(buffer) >= 4:
                    (size,) = struct.unpack_from(">i", buffer)
                    if len(buffer) < 4 + size:
                        break
                    self._record(client, buffer[: 4 + size])
                    buffer = buffer[4 + size :]
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    @staticmethod
    def _responses(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    def _record(self, client: str, wire: bytes) -> None:
        api_key, version = struct.unpack_from(">hh", wire, 4)
        name = f"{client}_{api_key_map.get(api_key, f'api{api_key}')}_v{version}"
        if api_key == 0:  # Produce: one vector per codec and producer kind
            request = decode_request(wire[4:], {0: (0, 99)})
            records = request.body.topic_data[0].partition_data[0].records
            header = parse_header(records)
            name += f"_{CODEC_NAMES[header.compression]}"
            if header.producer_id >= 0:
                name += "_idempotent"
        with self._lock:
            self.frames.setdefault(name, wire)


# --- the workloads -------------------------------------------------------------------------


def confluent_workload(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
    )

    topic = topic_for("confluent_kafka")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"retention.ms": RETENTION_MS}
    admin.create_topics([NewTopic(topic, 2, 1, config=config)])[topic].result(15)
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(15)
    resource = ConfigResource("topic", topic)
    admin.describe_configs([resource])[resource].result(15)
    entry = ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
    change = ConfigResource("topic", topic, incremental_configs=[entry])
    admin.incremental_alter_configs([change])[change].result(15)
    admin.describe_cluster().result(15)
    for idempotent in (False, True):
        for codec in CODECS if not idempotent else ("none",):
            producer = Producer(
                {
                    "bootstrap.servers": bootstrap,
                    "compression.type": codec,
                    "linger.ms": 50,
                    "acks": "all",
                    "enable.idempotence": idempotent,
                }
            )
            for key, value, headers, timestamp in records_for(codec):
                producer.produce(
                    topic, value, key, partition=0, headers=headers, timestamp=timestamp
                )
            assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    deadline = time.monotonic() + 15
    while got < RECORDS_PER_CODEC * 6 and time.monotonic() < deadline:
        got += len(consumer.consume(100, timeout=0.5))
    consumer.offsets_for_times([TopicPartition(topic, 0, BASE_TIMESTAMP + 2)], timeout=10)
    consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    consumer.close()
    admin.delete_records([TopicPartition(topic, 0, DELETE_BEFORE)])[
        TopicPartition(topic, 0, DELETE_BEFORE)
    ].result(15)
    admin.delete_topics([topic])[topic].result(15)


def kafka_python_workload(bootstrap: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka
        from kafka.admin import AlterConfigOp, ConfigResource

    topic = topic_for("kafka_python")
    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics(
        {
            topic: {
                "num_partitions": 2,
                "replication_factor": 1,
                "configs": {"retention.ms": RETENTION_MS},
            }
        }
    )
    admin.create_partitions({topic: 3})
    admin.describe_configs([ConfigResource("TOPIC", topic)])
    change = {"retention.ms": (AlterConfigOp.SET, "3600000")}
    admin.alter_configs([ConfigResource("TOPIC", topic, change)])
    admin.alter_configs(
        [ConfigResource("TOPIC", topic, {"retention.ms": "7200000"})], incremental=False
    )
    admin.describe_cluster()
    for codec in CODECS:
        producer = kafka.KafkaProducer(
            bootstrap_servers=bootstrap,
            compression_type=None if codec == "none" else codec,
            linger_ms=50,
            acks="all",
        )
        futures = [
            producer.send(
                topic, key=key, value=value, headers=headers, timestamp_ms=ts, partition=0
            )
            for key, value, headers, ts in records_for(codec)
        ]
        producer.flush(15)
        for future in futures:
            future.get(10)
        producer.close(timeout=10)
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    tp = kafka.TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    got = 0
    deadline = time.monotonic() + 15
    while got < RECORDS_PER_CODEC * 5 and time.monotonic() < deadline:
        got += sum(len(b) for b in consumer.poll(timeout_ms=500).values())
    consumer.offsets_for_times({tp: BASE_TIMESTAMP + 2})
    consumer.beginning_offsets([tp])
    consumer.end_offsets([tp])
    consumer.close()
    admin.delete_records({tp: DELETE_BEFORE})
    admin.delete_topics([topic])
    admin.close()


async def _aiokafka_workload(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    topic = topic_for("aiokafka")
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        config = {"retention.ms": RETENTION_MS}
        await admin.create_topics([NewTopic(topic, 2, 1, topic_configs=config)])
        await admin.create_partitions({topic: NewPartitions(3)})
        await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        change = ConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": "3600000"})
        await admin.alter_configs([change])
        for idempotent in (False, True):
            for codec in CODECS if not idempotent else ("none",):
                producer = AIOKafkaProducer(
                    bootstrap_servers=bootstrap,
                    compression_type=None if codec == "none" else codec,
                    linger_ms=50,
                    acks="all",
                    enable_idempotence=idempotent,
                )
                await producer.start()
                try:
                    futures = [
                        await producer.send(
                            topic,
                            key=key,
                            value=value,
                            headers=headers,
                            timestamp_ms=ts,
                            partition=0,
                        )
                        for key, value, headers, ts in records_for(codec)
                    ]
                    await asyncio.gather(*futures)
                finally:
                    await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            got = 0
            deadline = time.monotonic() + 15
            while got < RECORDS_PER_CODEC * 6 and time.monotonic() < deadline:
                got += sum(len(b) for b in (await consumer.getmany(timeout_ms=500)).values())
            await consumer.offsets_for_times({tp: BASE_TIMESTAMP + 2})
            await consumer.end_offsets([tp])
        finally:
            await consumer.stop()
        await admin.delete_records({TopicPartition(topic, 0): RecordsToDelete(DELETE_BEFORE)})
        await admin.delete_topics([topic])
    finally:
        await admin.close()


def aiokafka_workload(bootstrap: str) -> None:
    asyncio.run(_aiokafka_workload(bootstrap))


def kcat_workload(bootstrap: str) -> None:
    topic = topic_for("kcat")

    def kcat(*args: str, stdin: bytes = b"") -> None:
        subprocess.run(
            ["kcat", "-b", bootstrap, *args],
            input=stdin,
            check=True,
            timeout=30,
            capture_output=True,
        )

    kcat("-L")
    for codec in CODECS:
        lines = b"".join(k + b"\t" + v + b"\n" for k, v, _, _ in records_for(codec))
        args = ["-t", topic, "-p", "0", "-P", "-K", r"\t", "-H", "h=kcat", "-X", "acks=all"]
        kcat(*args, *(["-z", codec] if codec != "none" else []), stdin=lines)
    kcat("-t", topic, "-C", "-e", "-o", "beginning")
    kcat("-Q", "-t", f"{topic}:0:{BASE_TIMESTAMP}")


WORKLOADS = {
    "confluent_kafka": confluent_workload,
    "kafka_python": kafka_python_workload,
    "aiokafka": aiokafka_workload,
    "kcat": kcat_workload,
}


# --- running a private broker --------------------------------------------------------------


def wait_listening(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--keep", action="store_true", help="keep existing .bin files")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="weir-vectors-"))
    redis_port, broker_port, proxy_port = free_port(), free_port(), free_port()
    redis = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--save", "", "--appendonly", "no"],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
    )
    broker = None
    proxy = RecordingProxy(proxy_port, broker_port)
    try:
        wait_listening(redis_port, redis, "redis-server")
        env = dict(
            os.environ,
            WEIR_REDIS_URL=f"redis://127.0.0.1:{redis_port}/0",
            WEIR_CLUSTER_ID="vectors",
        )
        with (workdir / "broker.log").open("wb") as log:
            broker = subprocess.Popen(
                [
                    sys.executable,
                    str(ROOT / "manage.py"),
                    "runbroker",
                    *("--broker-id", "1", "--listen", f"127.0.0.1:{broker_port}"),
                    *("--advertise", f"127.0.0.1:{proxy_port}"),
                    *("--data-dir", str(workdir / "data")),
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=log,
            )
        wait_listening(broker_port, broker, "broker")
        proxy.start()
        for client, workload in WORKLOADS.items():
            proxy.client = client
            workload(f"127.0.0.1:{proxy_port}")
            print(f"{client}: done", file=sys.stderr)
    except BaseException:
        log_text = (workdir / "broker.log").read_text(errors="replace")
        print(f"broker log (tail):\n{log_text[-4000:]}", file=sys.stderr)
        raise
    finally:
        proxy.close()
        for proc in (broker, redis):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(20)
        shutil.rmtree(workdir, ignore_errors=True)

    args.out.mkdir(parents=True, exist_ok=True)
    if not args.keep:
        for old in args.out.glob("*.bin"):
            old.unlink()
    for name, wire in sorted(proxy.frames.items()):
        (args.out / f"{name}.bin").write_bytes(wire)
        print(f"{name}.bin ({len(wire)} bytes)")


if __name__ == "__main__":
    main()
