"""Request frames captured from real clients decode with the broker's codec.

The vectors in ``vectors/`` were recorded once by ``vectors/capture.py`` (a recording proxy
in front of a Weir broker) from confluent-kafka (librdkafka 2.16), kafka-python 3,
aiokafka and Debian's kcat (librdkafka 2.0.2). Each file is one frame as it crossed the
wire. These tests need no broker: they prove the sans-io layer reads exactly what those
clients send (header, body, record batches in every codec) and nothing is left over.
"""

from __future__ import annotations

import io
import re
import struct
from pathlib import Path

import pytest
from kio.index import load_request_schema
from kio.schema.index import api_key_map
from kio.serial import entity_reader, entity_writer

from tests.weir.protocol.vectors.capture import (
    BASE_TIMESTAMP,
    CLIENTS,
    CODECS,
    DELETE_BEFORE,
    RECORDS_PER_CODEC,
    RETENTION_MS,
    records_for,
    topic_for,
)
from weir.handlers import supported_versions
from weir.protocol.codec import Request, UnsupportedVersionError, decode_request
from weir.protocol.inflate import iter_records
from weir.protocol.records import MAGIC_V2, validate_batches

VECTORS = Path(__file__).parent / "vectors"
NAME = re.compile(
    rf"^(?P<client>{'|'.join(CLIENTS)})_(?P<api>[a-z_]+)_v(?P<version>\d+)"
    rf"(?:_(?P<codec>{'|'.join(CODECS)}))?(?P<idempotent>_idempotent)?\.bin$"
)
CLIENT_IDS = {
    "confluent_kafka": "rdkafka",
    "kcat": "rdkafka",
    "kafka_python": "kafka-python-",
    "aiokafka": "aiokafka-",
}
API_KEYS = {name: key for key, name in api_key_map.items()}


# What the broker implements (no broker needed).
SUPPORTED = supported_versions()
ALL_VECTORS = sorted(VECTORS.glob("*.bin"))


def vector_id(path: Path) -> str:
    return path.stem


def parts(path: Path) -> re.Match[str]:
    match = NAME.match(path.name)
    assert match, f"unexpected vector name {path.name}"
    return match


def frame_of(path: Path) -> bytes:
    """The frame without its size prefix, after checking the prefix."""
    wire = path.read_bytes()
    (size,) = struct.unpack_from(">i", wire)
    assert size == len(wire) - 4, f"{path.name}: size prefix {size}, {len(wire) - 4} bytes"
    return wire[4:]


def decoded(path: Path) -> Request:
    return decode_request(frame_of(path), SUPPORTED)


def vectors_of(api: str) -> list[Path]:
    return [p for p in ALL_VECTORS if parts(p)["api"] == api]


def test_the_supported_table_matches_what_the_broker_advertises() -> None:
    assert SUPPORTED[0] == (3, 9)  # Produce
    assert SUPPORTED[18] == (0, 3)  # ApiVersions
    assert SUPPORTED[1] == (4, 12)  # Fetch
    assert len(SUPPORTED) >= 19


def test_vectors_cover_every_clients_workload() -> None:
    seen: dict[str, set[str]] = {client: set() for client in CLIENTS}
    for path in ALL_VECTORS:
        seen[parts(path)["client"]].add(parts(path)["api"])
    common = {"api_versions", "metadata", "produce", "fetch", "list_offsets"}
    admin = {"create_topics", "create_partitions", "delete_topics", "delete_records"}
    admin |= {"describe_configs"}
    assert seen["kcat"] >= common
    assert seen["confluent_kafka"] >= common | admin | {"init_producer_id"}
    assert seen["confluent_kafka"] >= {"incremental_alter_configs"}
    assert seen["kafka_python"] >= common | admin | {"init_producer_id", "describe_cluster"}
    assert seen["kafka_python"] >= {"alter_configs", "incremental_alter_configs"}
    assert seen["aiokafka"] >= common | admin | {"init_producer_id", "alter_configs"}
    codecs = {(parts(p)["client"], parts(p)["codec"]) for p in vectors_of("produce")}
    for client in ("kafka_python", "aiokafka"):
        assert {c for k, c in codecs if k == client} == set(CODECS)


@pytest.mark.parametrize("path", ALL_VECTORS, ids=vector_id)
def test_every_vector_decodes_with_the_broker_codec(path: Path) -> None:
    match = parts(path)
    api_key, version = API_KEYS[match["api"]], int(match["version"])
    low, high = SUPPORTED[api_key]
    if not low <= version <= high:
        # Only ApiVersions may arrive above the range (KIP-511: the client tries its newest
        # version first); the codec says so with the correlation id to answer.
        assert match["api"] == "api_versions"
        with pytest.raises(UnsupportedVersionError) as unsupported:
            decoded(path)
        assert (unsupported.value.api_key, unsupported.value.api_version) == (18, version)
        return
    request = decoded(path)
    assert (request.api_key, request.api_version) == (api_key, version)
    assert request.client_id is not None
    assert request.client_id.startswith(CLIENT_IDS[match["client"]])
    assert request.correlation_id >= 0
    assert request.size == len(path.read_bytes()) - 4


@pytest.mark.parametrize("path", ALL_VECTORS, ids=vector_id)
def test_every_vector_re_encodes_to_the_same_bytes(path: Path) -> None:
    """kio's reader consumed the whole frame and reading is lossless: writing the decoded
    header and body back gives the bytes the client sent."""
    frame = frame_of(path)
    api_key, version = struct.unpack_from(">hh", frame)
    body_type = load_request_schema(api_key, version)
    header_type = body_type.__header_schema__
    header, header_size = entity_reader(header_type)(frame, 0)
    body, body_size = entity_reader(body_type)(frame, header_size)
    trailing = len(frame) - header_size - body_size
    assert trailing == 0, f"{trailing} trailing bytes"
    out = io.BytesIO()
    entity_writer(header_type)(out, header)
    entity_writer(body_type)(out, body)
    assert out.getvalue() == frame


@pytest.mark.parametrize("path", vectors_of("produce"), ids=vector_id)
def test_produce_vectors_carry_valid_batches_in_the_named_codec(path: Path) -> None:
    match = parts(path)
    client, codec = match["client"], match["codec"]
    body = decoded(path).body
    assert body.acks == -1  # every workload produces with acks=all
    assert body.transactional_id is None
    assert body.timeout.total_seconds() > 0
    (topic,) = body.topic_data
    assert topic.name == topic_for(client)
    (partition,) = topic.partition_data
    assert partition.index == 0

    batches = validate_batches(partition.records)  # framing, magic and CRC-32C
    expected = records_for(codec)
    decoded_records = []
    for position, header in batches:
        assert header.magic == MAGIC_V2
        assert header.compression == CODECS.index(codec)
        assert not header.is_transactional and not header.is_control
        assert not header.is_log_append_time
        assert header.base_offset == 0  # the broker assigns offsets
        assert header.has_producer_id == bool(match["idempotent"])
        if match["idempotent"]:
            assert header.producer_epoch == 0
            assert header.base_sequence == 0
        decoded_records += list(iter_records(partition.records, position))
    assert 1 <= len(decoded_records) <= RECORDS_PER_CODEC
    assert [r.offset for r in decoded_records] == list(range(len(decoded_records)))
    for record, (key, value, headers, timestamp) in zip(decoded_records, expected, strict=False):
        assert (record.key, record.value) == (key, value)
        if client == "kcat":  # -H is per run; kcat cannot set timestamps
            assert record.headers == (("h", b"kcat"),)
            assert record.timestamp > BASE_TIMESTAMP
        else:
            assert record.headers == tuple(headers)
            assert record.timestamp == timestamp


@pytest.mark.parametrize("path", vectors_of("fetch"), ids=vector_id)
def test_fetch_vectors_ask_for_the_workload_topic_from_offset_zero(path: Path) -> None:
    client = parts(path)["client"]
    body = decoded(path).body
    assert body.replica_id == -1  # a consumer, not a follower
    assert body.max_bytes > 0 and body.min_bytes >= 1
    assert body.max_wait.total_seconds() > 0
    # librdkafka defaults to isolation.level=read_committed; the Python clients do not.
    assert body.isolation_level == (1 if client in ("confluent_kafka", "kcat") else 0)
    (topic,) = body.topics
    assert topic.topic == topic_for(client)
    (partition,) = topic.partitions
    assert (partition.partition, partition.fetch_offset) == (0, 0)
    assert partition.partition_max_bytes > 0


@pytest.mark.parametrize("path", vectors_of("list_offsets"), ids=vector_id)
def test_list_offsets_vectors_name_the_partition_and_timestamp(path: Path) -> None:
    client = parts(path)["client"]
    body = decoded(path).body
    assert body.replica_id == -1
    (topic,) = body.topics
    assert topic.name == topic_for(client)
    (partition,) = topic.partitions
    assert partition.partition_index == 0
    # -2 earliest, -1 latest, or the workload's offsets-for-times lookup.
    assert partition.timestamp in (-2, -1, BASE_TIMESTAMP, BASE_TIMESTAMP + 2)


@pytest.mark.parametrize("path", vectors_of("create_topics"), ids=vector_id)
def test_create_topics_vectors(path: Path) -> None:
    body = decoded(path).body
    (topic,) = body.topics
    assert topic.name == topic_for(parts(path)["client"])
    assert (topic.num_partitions, topic.replication_factor) == (2, 1)
    assert topic.assignments == ()
    assert [(c.name, c.value) for c in topic.configs] == [("retention.ms", RETENTION_MS)]
    assert body.validate_only is False


@pytest.mark.parametrize("path", vectors_of("create_partitions"), ids=vector_id)
def test_create_partitions_vectors(path: Path) -> None:
    (topic,) = decoded(path).body.topics
    assert (topic.name, topic.count, topic.assignments) == (
        topic_for(parts(path)["client"]),
        3,
        None,
    )


@pytest.mark.parametrize("path", vectors_of("delete_topics"), ids=vector_id)
def test_delete_topics_vectors(path: Path) -> None:
    body = decoded(path).body
    names = [t.name for t in body.topics] if hasattr(body, "topics") else list(body.topic_names)
    assert names == [topic_for(parts(path)["client"])]


@pytest.mark.parametrize("path", vectors_of("delete_records"), ids=vector_id)
def test_delete_records_vectors(path: Path) -> None:
    (topic,) = decoded(path).body.topics
    assert topic.name == topic_for(parts(path)["client"])
    assert [(p.partition_index, p.offset) for p in topic.partitions] == [(0, DELETE_BEFORE)]


CONFIG_APIS = ["describe_configs", "alter_configs", "incremental_alter_configs"]


@pytest.mark.parametrize("path", [p for api in CONFIG_APIS for p in vectors_of(api)], ids=vector_id)
def test_config_vectors_address_the_workload_topic(path: Path) -> None:
    match = parts(path)
    (resource,) = decoded(path).body.resources
    assert resource.resource_type == 2  # TOPIC
    assert resource.resource_name == topic_for(match["client"])
    if match["api"] == "describe_configs":
        assert resource.configuration_keys is None  # every config
    else:
        (config,) = resource.configs
        assert config.name == "retention.ms"
        assert config.value in ("3600000", "7200000")
        if match["api"] == "incremental_alter_configs":
            assert config.config_operation == 0  # SET


@pytest.mark.parametrize(
    "path",
    [p for p in vectors_of("api_versions") if int(parts(p)["version"]) <= SUPPORTED[18][1]],
    ids=vector_id,
)
def test_api_versions_vectors_name_the_client_software(path: Path) -> None:
    match = parts(path)
    version = int(match["version"])
    body = decoded(path).body
    expected = {
        "confluent_kafka": "confluent-kafka-python",
        "kafka_python": "kafka-python",
        "kcat": "librdkafka",
    }
    if version >= 3:
        assert body.client_software_name == expected[match["client"]]
        assert re.match(r"^[0-9]", body.client_software_version)


@pytest.mark.parametrize(
    "path", vectors_of("metadata") + vectors_of("init_producer_id"), ids=vector_id
)
def test_metadata_and_init_producer_id_vectors(path: Path) -> None:
    match = parts(path)
    body = decoded(path).body
    if match["api"] == "metadata":
        # Every client bootstraps with a brokers-only request (an empty topic list).
        assert body.topics == ()
        if int(match["version"]) >= 4:
            librdkafka = match["client"] in ("confluent_kafka", "kcat")
            assert body.allow_auto_topic_creation is not librdkafka
    else:
        assert body.transactional_id is None  # idempotent, not transactional
        if int(match["version"]) >= 3:  # a new producer, not an epoch bump (KIP-360)
            assert (body.producer_id, body.producer_epoch) == (-1, -1)
