"""Offset checkpoint files: Kafka's text format, atomic writes, strict reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir.log.checkpoint import (
    RECOVERY_POINT_CHECKPOINT_FILE,
    TopicPartition,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from weir.log.errors import CheckpointError


def test_offset_checkpoint_round_trips(tmp_path: Path) -> None:
    path = tmp_path / RECOVERY_POINT_CHECKPOINT_FILE
    offsets = {("orders", 0): 1500, ("orders", 1): 0, ("my.topic-x", 12): 2**40}
    write_offset_checkpoint(path, offsets)
    assert read_offset_checkpoint(path) == offsets


def test_offset_checkpoint_is_kafkas_text_format(tmp_path: Path) -> None:
    path = tmp_path / RECOVERY_POINT_CHECKPOINT_FILE
    write_offset_checkpoint(path, {("b", 1): 7, ("a", 0): 42})
    assert path.read_text() == "0\n2\na 0 42\nb 1 7\n"


def test_write_replaces_atomically_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "log-start-offset-checkpoint"
    write_offset_checkpoint(path, {("a", 0): 1})
    write_offset_checkpoint(path, {("a", 0): 2})
    assert read_offset_checkpoint(path) == {("a", 0): 2}
    assert [p.name for p in tmp_path.iterdir()] == ["log-start-offset-checkpoint"]


def test_missing_checkpoint_reads_as_empty(tmp_path: Path) -> None:
    assert read_offset_checkpoint(tmp_path / "nothing-here") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "truncated"),
        ("1\n0\n", "unsupported version"),
        ("0\nx\n", "bad entry count"),
        ("0\n2\na 0 1\n", "declares 2 entries but holds 1"),
        ("0\n1\na 0\n", "line 3: expected 3 fields"),
        ("0\n1\na zero 1\n", "partition 'zero' is not a number"),
        ("0\n1\na 0 1x\n", "offset of a-0 '1x' is not a number"),
    ],
)
def test_garbage_is_a_clear_error_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / RECOVERY_POINT_CHECKPOINT_FILE
    path.write_text(text)
    with pytest.raises(CheckpointError, match=message) as exc:
        read_offset_checkpoint(path)
    assert str(path) in str(exc.value)
    assert isinstance(exc.value, ValueError)


def test_topic_partition_directory_names() -> None:
    assert TopicPartition("my-topic", 3).dir_name == "my-topic-3"
    assert TopicPartition.from_dir_name("my-topic-3") == TopicPartition("my-topic", 3)
    with pytest.raises(ValueError):
        TopicPartition.from_dir_name("no_partition")
