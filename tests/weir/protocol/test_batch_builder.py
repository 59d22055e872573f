"""Batches the broker writes itself decode like any client's."""

from __future__ import annotations

import pytest

from weir.protocol.batch_builder import build_batch
from weir.protocol.inflate import iter_records
from weir.protocol.records import validate_batches


def test_built_batch_validates_and_round_trips() -> None:
    records = [(b"k1", b"v1"), (None, b"v2"), (b"k3", None), (b"", b"x" * 300)]
    batch = build_batch(records, timestamp_ms=1_700_000_000_000)
    ((pos, header),) = validate_batches(batch)  # CRC checked
    assert pos == 0 and header.records_count == 4 and header.size == len(batch)
    decoded = list(iter_records(bytes(batch)))
    assert [(r.key, r.value) for r in decoded] == records
    assert [r.offset for r in decoded] == [0, 1, 2, 3]
    assert {r.timestamp for r in decoded} == {1_700_000_000_000}


def test_an_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError):
        build_batch([], timestamp_ms=0)
