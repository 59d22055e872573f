"""``__transaction_state`` records: Kafka's byte layouts (v0 and flexible v1), tombstones,
unknown versions, replay."""

from __future__ import annotations

import pytest

from weir.transactions import (
    RecordFormatError,
    TransactionLogValue,
    TransactionRecord,
    TransactionState,
    UnknownRecord,
    decode,
    encode,
    encode_key,
    encode_value,
    replay,
)

S = TransactionState
TS = 0x0000019E7B4B367A  # a timestamp from a real Kafka 4.0 record


def hx(*fields: str) -> bytes:
    """Bytes from hex fields, one Kafka field per argument so vectors read like layouts."""
    return bytes.fromhex("".join(fields))


def ongoing(**changes: object) -> TransactionLogValue:
    fields: dict[str, object] = {
        "producer_id": 0,
        "producer_epoch": 0,
        "timeout_ms": 60_000,
        "state": S.ONGOING,
        "partitions": frozenset({("txtest", 0)}),
        "last_update_timestamp_ms": TS,
        "start_timestamp_ms": TS,
    }
    fields.update(changes)
    return TransactionLogValue(**fields)  # type: ignore[arg-type]


def test_key_is_version_0_and_a_classic_string() -> None:
    assert encode_key("my-txn-id") == hx("0000", "0009", b"my-txn-id".hex())


def test_value_v1_matches_the_bytes_kafka_4_writes() -> None:
    # An Ongoing record dumped from __transaction_state of Kafka 4.0.0 at transaction.version 1
    # (kafka-producer-perf-test --transactional-id my-txn-id, one partition txtest-0).
    kafka = hx(
        "0001",  # value version 1 (flexible)
        "0000000000000000",  # producer id 0
        "0000",  # producer epoch 0
        "0000ea60",  # transaction timeout 60000
        "01",  # status Ongoing
        "02",  # partitions: compact array of 1
        "07",  # topic: compact string of 6
        b"txtest".hex(),
        "02",  # partition ids: compact array of 1
        "00000000",  # partition 0
        "00",  # no tagged fields in the topic entry
        "0000019e7b4b367a",  # last update timestamp
        "0000019e7b4b367a",  # start timestamp
        "00",  # no tagged fields (previous/next producer id -1, client version 0)
    )
    assert len(kafka) == 48
    assert encode_value(ongoing()) == kafka
    assert decode(encode_key("my-txn-id"), kafka) == TransactionRecord("my-txn-id", ongoing())


def test_value_v0_layout() -> None:
    value = ongoing(
        producer_id=7,
        producer_epoch=3,
        state=S.PREPARE_COMMIT,
        partitions=frozenset({("b", 2), ("a", 1), ("b", 0)}),
    )
    assert encode_value(value, 0) == hx(
        "0000",  # value version 0
        "0000000000000007",  # producer id
        "0003",  # epoch
        "0000ea60",  # timeout
        "02",  # PrepareCommit
        "00000002",  # two topics, sorted
        "0001",
        b"a".hex(),
        "00000001",
        "00000001",  # a: [1]
        "0001",
        b"b".hex(),
        "00000002",
        "00000000",
        "00000002",  # b: [0, 2]
        "0000019e7b4b367a",
        "0000019e7b4b367a",
    )
    assert decode(encode_key("t"), encode_value(value, 0)) == TransactionRecord("t", value)


def test_empty_state_writes_a_null_partition_array() -> None:
    value = ongoing(state=S.EMPTY, partitions=frozenset(), start_timestamp_ms=-1)
    v0 = encode_value(value, 0)
    assert v0[2 + 8 + 2 + 4 + 1 :][:4] == hx("ffffffff")
    v1 = encode_value(value, 1)
    assert v1[2 + 8 + 2 + 4 + 1] == 0  # compact null
    for raw in (v0, v1):
        assert decode(encode_key("t"), raw) == TransactionRecord("t", value)


def test_complete_state_writes_an_empty_not_null_partition_array() -> None:
    value = ongoing(state=S.COMPLETE_COMMIT, partitions=frozenset())
    assert encode_value(value, 0)[17:21] == hx("00000000")
    assert encode_value(value, 1)[17] == 1  # compact length 0 + 1


def test_empty_with_partitions_is_refused() -> None:
    with pytest.raises(RecordFormatError):
        encode_value(ongoing(state=S.EMPTY))


def test_tagged_fields_are_written_only_when_not_default() -> None:
    value = ongoing(previous_producer_id=5, next_producer_id=9, client_transaction_version=2)
    raw = encode_value(value)
    assert raw.endswith(
        hx(
            "03",  # three tagged fields, ascending tags
            "00",
            "08",
            "0000000000000005",  # tag 0 PreviousProducerId
            "01",
            "08",
            "0000000000000009",  # tag 1 NextProducerId
            "02",
            "02",
            "0002",  # tag 2 ClientTransactionVersion
        )
    )
    assert decode(encode_key("t"), raw) == TransactionRecord("t", value)
    # Version 0 has no room for them: they read back as defaults.
    plain = ongoing()
    assert decode(encode_key("t"), encode_value(value, 0)) == TransactionRecord("t", plain)


def test_unknown_tags_are_skipped() -> None:
    raw = encode_value(ongoing())[:-1] + hx("01", "03", "02", "0005")  # tag 3, 2 bytes
    assert decode(encode_key("t"), raw) == TransactionRecord("t", ongoing())


def test_tombstone_and_unknown_versions() -> None:
    assert decode(encode_key("t"), None) == TransactionRecord("t", None)
    assert encode(TransactionRecord("t", None)) == (encode_key("t"), None)
    assert decode(hx("0001", "0001", "74"), b"") == UnknownRecord(1)
    assert decode(encode_key("t"), hx("0002", "00")) == UnknownRecord(0, 2)


@pytest.mark.parametrize(
    "value",
    [
        hx("0001", "00"),  # truncated
        encode_value(ongoing())[:-1],  # tagged section missing
        encode_value(ongoing()) + b"\x00",  # trailing garbage
        encode_value(ongoing(), 0)[:16] + hx("09") + encode_value(ongoing(), 0)[17:],  # status 9
    ],
)
def test_malformed_values_raise_record_format_error(value: bytes) -> None:
    with pytest.raises(RecordFormatError):
        decode(encode_key("t"), value)


def test_encode_uses_the_requested_value_version() -> None:
    record = TransactionRecord("t", ongoing())
    assert encode(record, value_version=0)[1] == encode_value(ongoing(), 0)
    assert encode(record)[1] == encode_value(ongoing(), 1)
    with pytest.raises(RecordFormatError):
        encode(record, value_version=2)


def test_replay_keeps_the_latest_state_and_forgets_tombstoned_ids() -> None:
    first = ongoing()
    second = ongoing(state=S.PREPARE_COMMIT)
    records = [
        encode(TransactionRecord("a", first)),
        encode(TransactionRecord("b", first), value_version=0),
        encode(TransactionRecord("a", second)),
        encode(TransactionRecord("b", None)),
        (hx("0001", "0001", "74"), b"whatever"),  # another coordinator's record kind
        (encode_key("c"), hx("0005", "00")),  # a value version from the future
    ]
    assert replay(records) == {"a": second}
