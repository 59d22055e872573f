"""``__consumer_offsets`` records: Kafka's byte layouts, tombstones, replay, placement."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from tests.weir.coordinator.harness import SESSION_MS, Driver
from weir.coordinator import (
    Group,
    GroupMetadataRecord,
    GroupSnapshot,
    GroupState,
    MemberSnapshot,
    OffsetAndMetadata,
    OffsetCommitRecord,
    OffsetStore,
    decode,
    encode,
    encode_group_metadata,
    encode_group_tombstone,
    encode_offset_commit,
    partition_for,
    replay,
)
from weir.coordinator.offsets import PartitionCommit
from weir.coordinator.records import RecordFormatError, UnknownRecord, java_string_hash

E = ErrorCode
TS = 1_700_000_000_000  # 0x0000018BCFE56800


# -- OffsetCommit ------------------------------------------------------------------------


def hx(*fields: str) -> bytes:
    """Bytes from hex fields, one Kafka field per argument so vectors read like layouts."""
    return bytes.fromhex("".join(fields))


def s16(text: str) -> str:
    """A Kafka string field: int16 length, then UTF-8, in hex."""
    raw = text.encode()
    return f"{len(raw):04x}{raw.hex()}"


def test_offset_commit_key_v1_and_value_v3_bytes() -> None:
    key, value = encode_offset_commit("g1", "t", 3, OffsetAndMetadata(100, 5, "m", TS))
    assert key == hx(
        "0001",  # key version 1
        "0002",  # group: length 2
        "6731",  # "g1"
        "0001",  # topic: length 1
        "74",  # "t"
        "00000003",  # partition 3
    )
    assert value == hx(
        "0003",  # value version 3
        "0000000000000064",  # offset 100
        "00000005",  # leader epoch 5
        "0001",  # metadata: length 1
        "6d",  # "m"
        "0000018bcfe56800",  # commit timestamp 1_700_000_000_000
    )
    assert decode(key, value) == OffsetCommitRecord(
        "g1", "t", 3, OffsetAndMetadata(100, 5, "m", TS)
    )


def test_offset_commit_with_expiry_uses_value_v1() -> None:
    offset = OffsetAndMetadata(7, 9, "", TS, TS + 1)
    _, value = encode_offset_commit("g", "t", 0, offset)
    assert value == hx(
        "0001",  # value version 1 (has room for an expiry, not for a leader epoch)
        "0000000000000007",  # offset
        "0000",  # metadata ""
        "0000018bcfe56800",  # commit timestamp
        "0000018bcfe56801",  # expire timestamp
    )
    # v1 has no leader epoch: it reads back as -1.
    assert decode(*encode_offset_commit("g", "t", 0, offset)) == OffsetCommitRecord(
        "g", "t", 0, OffsetAndMetadata(7, -1, "", TS, TS + 1)
    )


def test_offset_value_v0_and_key_v0_decode() -> None:
    key = hx("0000", s16("g"), s16("t"), "00000001")
    value = hx("0000", "000000000000000a", s16("hi"), "0000018bcfe56800")
    assert decode(key, value) == OffsetCommitRecord(
        "g", "t", 1, OffsetAndMetadata(10, -1, "hi", TS)
    )


def test_offset_tombstone_has_null_value() -> None:
    key, value = encode_offset_commit("g1", "t", 3, None)
    assert value is None
    assert decode(key, None) == OffsetCommitRecord("g1", "t", 3, None)


# -- GroupMetadata -----------------------------------------------------------------------


def test_group_metadata_key_v2_and_value_v3_bytes() -> None:
    snapshot = GroupSnapshot(
        group_id="g",
        protocol_type="consumer",
        generation_id=2,
        protocol_name="range",
        leader="m1",
        current_state_timestamp_ms=TS,
        members=(MemberSnapshot("m1", "i1", "c", "/h", 30_000, 10_000, b"\x01\x02", b"\x03"),),
    )
    key, value = encode_group_metadata(snapshot)
    assert key == hx("0002", s16("g"))  # key version 2, group
    assert value == hx(
        "0003",  # value version 3
        s16("consumer"),  # protocol type
        "00000002",  # generation 2
        s16("range"),  # protocol (nullable string, present)
        s16("m1"),  # leader (nullable string, present)
        "0000018bcfe56800",  # current state timestamp
        "00000001",  # members: array of 1
        s16("m1"),  # member id
        s16("i1"),  # group instance id (nullable string, present)
        s16("c"),  # client id
        s16("/h"),  # client host
        "00007530",  # rebalance timeout 30000
        "00002710",  # session timeout 10000
        "00000002",  # subscription: 2 bytes
        "0102",
        "00000001",  # assignment: 1 byte
        "03",
    )
    assert s16("consumer") == "0008" + "636f6e73756d6572"  # the helper itself, by hand
    assert decode(key, value) == GroupMetadataRecord("g", snapshot)


def test_empty_group_metadata_has_null_protocol_and_leader() -> None:
    snapshot = GroupSnapshot("g", "consumer", 5, None, None, TS, ())
    key, value = encode_group_metadata(snapshot)
    assert value == hx(
        "0003",
        s16("consumer"),
        "00000005",  # generation
        "ffff",  # protocol: null
        "ffff",  # leader: null
        "0000018bcfe56800",
        "00000000",  # no members
    )
    assert decode(key, value) == GroupMetadataRecord("g", snapshot)


def test_group_metadata_value_v0_uses_session_timeout_as_rebalance_timeout() -> None:
    value = hx(
        "0000",  # value version 0: no timestamp, no instance id, no rebalance timeout
        s16("consumer"),
        "00000001",  # generation
        s16("r"),  # protocol
        s16("m"),  # leader
        "00000001",  # one member
        s16("m"),
        s16("c"),
        s16("h"),
        "00001770",  # session timeout 6000
        "00000000",  # subscription: empty
        "00000000",  # assignment: empty
    )
    record = decode(encode_group_tombstone("g")[0], value)
    assert record == GroupMetadataRecord(
        "g",
        GroupSnapshot(
            "g",
            "consumer",
            1,
            "r",
            "m",
            -1,
            (MemberSnapshot("m", None, "c", "h", 6000, 6000, b"", b""),),
        ),
    )


def test_group_tombstone_round_trips() -> None:
    key, value = encode_group_tombstone("g")
    assert (key, value) == (hx("0002", "0001", "67"), None)
    assert decode(key, value) == GroupMetadataRecord("g", None)
    assert encode(GroupMetadataRecord("g", None)) == (key, None)


def test_encode_of_live_group_matches_its_snapshot() -> None:
    driver = Driver()
    driver.stable_group(2)
    key, value = encode_group_metadata(driver.group)
    record = decode(key, value)
    assert isinstance(record, GroupMetadataRecord)
    assert record.value == driver.group.snapshot()


def test_unknown_key_versions_and_garbage() -> None:
    assert decode(bytes.fromhex("0003000167"), b"whatever") == UnknownRecord(3)
    with pytest.raises(RecordFormatError):
        decode(b"\x00", None)
    with pytest.raises(RecordFormatError):
        decode(bytes.fromhex("0001000567"), None)  # string runs past the end
    with pytest.raises(RecordFormatError, match="version 4"):
        decode(encode_group_tombstone("g")[0], bytes.fromhex("0004"))


# -- replay ------------------------------------------------------------------------------


def test_replay_later_records_win_and_tombstones_delete() -> None:
    snapshot = GroupSnapshot("gone", "consumer", 3, None, None, TS, ())
    log = [
        encode_offset_commit("g", "t", 0, OffsetAndMetadata(1, -1, "", TS)),
        encode_offset_commit("g", "t", 0, OffsetAndMetadata(2, -1, "", TS + 1)),
        encode_offset_commit("g", "t", 1, OffsetAndMetadata(5, -1, "", TS)),
        encode_offset_commit("g", "t", 1, None),
        encode_group_metadata(snapshot),
        encode_group_tombstone("gone"),
        (bytes.fromhex("0005000167"), b"future record type"),
    ]
    groups, store = replay(log, now_ms=TS + 10)
    assert store.fetch("g") == store.fetch("g", [("t", 0)])
    assert store.committed("g", "t", 0) == OffsetAndMetadata(2, -1, "", TS + 1)
    assert store.committed("g", "t", 1) is None
    assert "gone" not in groups
    # Offsets without group metadata: a simple group, Empty, as in Kafka.
    assert groups["g"].state is GroupState.EMPTY and groups["g"].protocol_type is None


def test_replay_rebuilds_a_stable_group_a_crashed_coordinator_left() -> None:
    driver = Driver()
    (a, b), generation = driver.stable_group(2)
    store = OffsetStore()
    outcome = store.commit(
        group_id="payments",
        group=driver.group,
        member_id=a,
        group_instance_id=None,
        generation_id=generation,
        partitions=[PartitionCommit("orders", 0, 99, 4, "x")],
        api_version=8,
        now_ms=driver.now,
    )
    log: list[tuple[bytes, bytes | None]] = [
        encode_group_metadata(p.snapshot) for p in driver.persists
    ]
    log += [encode(r) for r in outcome.records]
    load_ms = driver.now + 1_000
    groups, loaded = replay(log, now_ms=load_ms)
    group = groups["payments"]
    assert group.state is GroupState.STABLE
    assert group.generation_id == generation
    assert group.leader_id == driver.group.leader_id
    assert {m: group.members[m].assignment for m in (a, b)} == {
        m: f"assignment-{m}".encode() for m in (a, b)
    }
    assert loaded.committed("payments", "orders", 0) == OffsetAndMetadata(99, 4, "x", driver.now)
    # Sessions restart at load time; members carry on with the same generation.
    assert group.next_deadline() == load_ms + SESSION_MS
    assert (
        group.heartbeat(
            member_id=a, group_instance_id=None, generation_id=generation, now_ms=load_ms
        )
        is E.none
    )


def test_replayed_empty_group_keeps_its_state_timestamp_for_expiry() -> None:
    snapshot = GroupSnapshot("g", "consumer", 4, None, None, TS, ())
    groups, _ = replay([encode_group_metadata(snapshot)], now_ms=TS + 5_000)
    assert groups["g"].state_timestamp_ms == TS
    assert groups["g"].generation_id == 4
    old = GroupSnapshot("g", "consumer", 4, None, None, -1, ())
    groups, _ = replay([encode_group_metadata(old)], now_ms=TS)
    assert groups["g"].state_timestamp_ms is None


def test_replay_restores_static_members() -> None:
    snapshot = GroupSnapshot(
        "g",
        "consumer",
        1,
        "range",
        "m1",
        TS,
        (MemberSnapshot("m1", "host-1", "c", "h", 1, 6000, b"", b"A"),),
    )
    groups, _ = replay([encode_group_metadata(snapshot)], now_ms=TS)
    assert groups["g"].static_member_id("host-1") == "m1"
    assert isinstance(groups["g"], Group)


# -- placement ---------------------------------------------------------------------------


def _java_hash_by_hand(text: str) -> int:
    # s[0]*31^(n-1) + s[1]*31^(n-2) + ... + s[n-1], reduced to a signed 32-bit int.
    n = len(text)
    total: int = sum(ord(ch) * 31 ** (n - 1 - i) for i, ch in enumerate(text))
    total %= 2**32
    return total - 2**32 if total >= 2**31 else total


def test_partition_for_matches_kafka_for_test_group() -> None:
    assert _java_hash_by_hand("test-group") == 627_841_412
    assert java_string_hash("test-group") == 627_841_412
    assert partition_for("test-group") == 627_841_412 % 50 == 12


def test_partition_for_negative_hash_uses_absolute_value() -> None:
    assert java_string_hash("my-group") == _java_hash_by_hand("my-group") == -1_906_497_762
    assert partition_for("my-group") == 1_906_497_762 % 50 == 12
    assert partition_for("my-group", 7) == 1_906_497_762 % 7


def test_partition_for_integer_min_value_hash_is_zero() -> None:
    # A famous string whose Java hashCode is Integer.MIN_VALUE: Math.abs would stay negative,
    # Kafka's Utils.abs maps it to 0.
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants") == 0


def test_java_hash_counts_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in Java's UTF-16 strings.
    expected = _java_hash_by_hand("g\ud83d\ude00")
    assert java_string_hash("g\U0001f600") == expected
    assert java_string_hash("") == 0
