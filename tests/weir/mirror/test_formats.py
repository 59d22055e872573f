"""MM2's internal record formats: byte vectors written by hand from the layouts in
``weir/mirror/formats.py`` (so a wrong layout fails here, not just a self-consistent one),
round trips, and every malformed input refused with a ValueError that names the record."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from weir.mirror.formats import (
    Checkpoint,
    Heartbeat,
    OffsetSync,
    mm2_translate_downstream,
)

# OffsetSync(orders, 3, upstream 1000, downstream 42)
SYNC_KEY = bytes.fromhex("0006" + b"orders".hex() + "00000003")
SYNC_VALUE = bytes.fromhex("00000000000003e8000000000000002a")

# Checkpoint(group "g1", target topic "east.orders", partition 7, 500 -> 123, metadata "m")
CHECKPOINT_KEY = bytes.fromhex("0002" + b"g1".hex() + "000b" + b"east.orders".hex() + "00000007")
CHECKPOINT_VALUE = bytes.fromhex("000000000000000001f4000000000000007b0001" + b"m".hex())

# Heartbeat(east -> west at 1700000000000 ms = 0x18BCFE56800)
HEARTBEAT_KEY = bytes.fromhex("0004" + b"east".hex() + "0004" + b"west".hex())
HEARTBEAT_VALUE = bytes.fromhex("00000000018bcfe56800")


def test_offset_sync_matches_hand_built_bytes() -> None:
    sync = OffsetSync("orders", 3, 1000, 42)
    assert sync.to_record() == (SYNC_KEY, SYNC_VALUE)
    assert OffsetSync.from_record(SYNC_KEY, SYNC_VALUE) == sync


def test_checkpoint_matches_hand_built_bytes_with_version_zero_first() -> None:
    checkpoint = Checkpoint("g1", "east.orders", 7, 500, 123, "m")
    assert checkpoint.to_record() == (CHECKPOINT_KEY, CHECKPOINT_VALUE)
    assert Checkpoint.from_record(CHECKPOINT_KEY, CHECKPOINT_VALUE) == checkpoint


def test_heartbeat_matches_hand_built_bytes_with_version_zero_first() -> None:
    heartbeat = Heartbeat("east", "west", 1_700_000_000_000)
    assert heartbeat.to_record() == (HEARTBEAT_KEY, HEARTBEAT_VALUE)
    assert Heartbeat.from_record(HEARTBEAT_KEY, HEARTBEAT_VALUE) == heartbeat


def test_negative_int64_is_big_endian_twos_complement() -> None:
    # MM2 writes downstream offset -1 when the sync is past the group.
    _, value = Checkpoint("g", "t", 0, 5, -1).to_record()
    assert value == bytes.fromhex("00000000000000000005ffffffffffffffff0000")


@pytest.mark.parametrize(
    "record",
    [
        OffsetSync("", 0, 0, 0),
        OffsetSync("t" * 32767, 2**31 - 1, 2**63 - 1, -(2**63)),
        Checkpoint("grupo-ñ", "east.日本", 0, 0, -1, ""),
        Checkpoint("g", "t", -(2**31), 1, 2, "x" * 32767),
        Heartbeat("", "", 0),
        Heartbeat("a" * 100, "b", -1),
    ],
    ids=repr,
)
def test_round_trip(record: OffsetSync | Checkpoint | Heartbeat) -> None:
    key, value = record.to_record()
    assert type(record).from_record(key, value) == record


def test_string_length_counts_utf8_bytes_not_characters() -> None:
    key, _ = Heartbeat("ñ", "", 0).to_record()
    assert key == bytes.fromhex("0002c3b10000")


def test_decodes_from_memoryview_and_bytearray() -> None:
    assert OffsetSync.from_record(bytearray(SYNC_KEY), memoryview(SYNC_VALUE)) == OffsetSync(
        "orders", 3, 1000, 42
    )


# Malformed input: (record class, key, value, words the message must contain)
MALFORMED = [
    # Truncation at every field boundary and inside fields.
    (OffsetSync, b"", SYNC_VALUE, "OffsetSync key truncated"),
    (OffsetSync, SYNC_KEY[:1], SYNC_VALUE, "OffsetSync key truncated"),
    (OffsetSync, SYNC_KEY[:5], SYNC_VALUE, "OffsetSync key truncated: field 'topic'"),
    (OffsetSync, SYNC_KEY[:-1], SYNC_VALUE, "OffsetSync key truncated: field 'partition'"),
    (OffsetSync, SYNC_KEY, SYNC_VALUE[:8], "OffsetSync value truncated: field 'offset'"),
    (OffsetSync, SYNC_KEY, b"", "OffsetSync value truncated: field 'upstreamOffset'"),
    (Checkpoint, CHECKPOINT_KEY, b"", "Checkpoint value truncated: field 'version'"),
    (Checkpoint, CHECKPOINT_KEY, CHECKPOINT_VALUE[:-1], "Checkpoint value truncated"),
    (Checkpoint, CHECKPOINT_KEY, CHECKPOINT_VALUE[:17], "field 'offset'"),
    (Checkpoint, CHECKPOINT_KEY[:-4], CHECKPOINT_VALUE, "Checkpoint key truncated"),
    (Checkpoint, CHECKPOINT_KEY[:4], CHECKPOINT_VALUE, "field 'topic'"),
    (Heartbeat, HEARTBEAT_KEY[:-1], HEARTBEAT_VALUE, "Heartbeat key truncated"),
    (Heartbeat, HEARTBEAT_KEY[:6], HEARTBEAT_VALUE, "field 'targetClusterAlias'"),
    (Heartbeat, HEARTBEAT_KEY, HEARTBEAT_VALUE[:9], "Heartbeat value truncated"),
    (Heartbeat, HEARTBEAT_KEY, b"\x00", "field 'version'"),
    # Trailing bytes.
    (OffsetSync, SYNC_KEY + b"\x00", SYNC_VALUE, "OffsetSync key: 1 trailing bytes"),
    (OffsetSync, SYNC_KEY, SYNC_VALUE + b"\x00\x00", "OffsetSync value: 2 trailing bytes"),
    (Checkpoint, CHECKPOINT_KEY + b"x", CHECKPOINT_VALUE, "Checkpoint key: 1 trailing"),
    (Checkpoint, CHECKPOINT_KEY, CHECKPOINT_VALUE + b"x", "Checkpoint value: 1 trailing"),
    (Heartbeat, HEARTBEAT_KEY + b"x", HEARTBEAT_VALUE, "Heartbeat key: 1 trailing"),
    (Heartbeat, HEARTBEAT_KEY, HEARTBEAT_VALUE + b"x", "Heartbeat value: 1 trailing"),
    # Unknown versions.
    (Checkpoint, CHECKPOINT_KEY, b"\x00\x01" + CHECKPOINT_VALUE[2:], "unknown version 1"),
    (Checkpoint, CHECKPOINT_KEY, b"\xff\xff" + CHECKPOINT_VALUE[2:], "unknown version -1"),
    (Heartbeat, HEARTBEAT_KEY, b"\x00\x02" + HEARTBEAT_VALUE[2:], "Heartbeat value: unknown"),
    # Negative string lengths.
    (OffsetSync, b"\xff\xff" + SYNC_KEY[2:], SYNC_VALUE, "'topic' has negative length -1"),
    (Checkpoint, b"\x80\x00", CHECKPOINT_VALUE, "'group' has negative length -32768"),
    (Heartbeat, b"\x00\x00\xff\xfe", HEARTBEAT_VALUE, "'targetClusterAlias' has negative"),
    # Bad UTF-8.
    (OffsetSync, b"\x00\x01\xff\x00\x00\x00\x00", SYNC_VALUE, "'topic' is not valid UTF-8"),
    (
        Checkpoint,
        CHECKPOINT_KEY,
        CHECKPOINT_VALUE[:-3] + b"\x00\x01\xc3",
        "Checkpoint value: field 'metadata' is not valid UTF-8",
    ),
    (Heartbeat, b"\x00\x02\xed\xa0\x00\x00", HEARTBEAT_VALUE, "Heartbeat key: field"),
]


@pytest.mark.parametrize(
    ("cls", "key", "value", "message"), MALFORMED, ids=[case[3] for case in MALFORMED]
)
def test_malformed_record_is_refused_with_a_named_value_error(
    cls: type[OffsetSync | Checkpoint | Heartbeat], key: bytes, value: bytes, message: str
) -> None:
    with pytest.raises(ValueError, match=cls.KIND) as info:
        cls.from_record(key, value)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: OffsetSync("t" * 32768, 0, 0, 0), "OffsetSync: topic is 32768 UTF-8 bytes"),
        (lambda: OffsetSync("t", 2**31, 0, 0), "OffsetSync: partition=2147483648 is not an INT32"),
        (lambda: OffsetSync("t", 0, 2**63, 0), "upstream_offset=9223372036854775808"),
        (lambda: OffsetSync("t", True, 0, 0), "partition=True is not an INT32"),
        (lambda: Checkpoint("g", "t", 0, 0, 0, "ñ" * 16384), "metadata is 32768 UTF-8 bytes"),
        (lambda: Checkpoint("\ud800", "t", 0, 0, 0), "Checkpoint: group cannot be encoded"),
        (lambda: Checkpoint("g", "t", 0, 0, 0, None), "Checkpoint: metadata=None is not a str"),
        (lambda: Heartbeat("a", "b", -(2**63) - 1), "Heartbeat: timestamp_ms="),
    ],
)
def test_values_mm2_could_not_write_are_refused_when_built(
    build: Callable[[], object], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        build()
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("sync_upstream", "sync_downstream", "group_offset", "expected"),
    [
        (100, 40, 100, 40),  # group exactly on the sync
        (100, 40, 101, 41),  # one past the sync
        (100, 40, 5000, 41),  # far past: never more than one past the sync
        (100, 40, 99, -1),  # sync is ahead of the group: too old to translate
    ],
)
def test_mm2_translation_rule(
    sync_upstream: int, sync_downstream: int, group_offset: int, expected: int
) -> None:
    sync = OffsetSync("orders", 0, sync_upstream, sync_downstream)
    assert mm2_translate_downstream(sync, group_offset) == expected
