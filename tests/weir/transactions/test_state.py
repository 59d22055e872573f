"""The transaction state table, names and ids, epochs and placement, against Kafka's."""

from __future__ import annotations

import itertools

import pytest

from weir.config import BrokerConfig
from weir.transactions import (
    InvalidTransition,
    TransactionConfig,
    TransactionState,
    check_transition,
    is_epoch_exhausted,
    partition_for,
)

S = TransactionState

# Kafka's TransactionState.validPreviousStates, written out edge by edge (from -> to).
KAFKA_EDGES = {
    ("Empty", "Empty"),
    ("CompleteCommit", "Empty"),
    ("CompleteAbort", "Empty"),
    ("Ongoing", "Ongoing"),
    ("Empty", "Ongoing"),
    ("CompleteCommit", "Ongoing"),
    ("CompleteAbort", "Ongoing"),
    ("Ongoing", "PrepareCommit"),
    ("Ongoing", "PrepareAbort"),
    ("PrepareEpochFence", "PrepareAbort"),
    ("Empty", "PrepareAbort"),
    ("CompleteCommit", "PrepareAbort"),
    ("CompleteAbort", "PrepareAbort"),
    ("PrepareCommit", "CompleteCommit"),
    ("PrepareAbort", "CompleteAbort"),
    ("Empty", "Dead"),
    ("CompleteAbort", "Dead"),
    ("CompleteCommit", "Dead"),
    ("Ongoing", "PrepareEpochFence"),
}
ALL_PAIRS = list(itertools.product(TransactionState, repeat=2))


@pytest.mark.parametrize(
    ("current", "target"),
    [(a, b) for a, b in ALL_PAIRS if (a.kafka_name, b.kafka_name) in KAFKA_EDGES],
    ids=lambda s: s.kafka_name,
)
def test_valid_transition_is_allowed(current: TransactionState, target: TransactionState) -> None:
    check_transition(current, target)


@pytest.mark.parametrize(
    ("current", "target"),
    [(a, b) for a, b in ALL_PAIRS if (a.kafka_name, b.kafka_name) not in KAFKA_EDGES],
    ids=lambda s: s.kafka_name,
)
def test_invalid_transition_raises(current: TransactionState, target: TransactionState) -> None:
    with pytest.raises(InvalidTransition, match=f"{current.kafka_name} cannot move"):
        check_transition(current, target)


def test_ids_and_names_are_kafkas() -> None:
    assert [(s.value, s.kafka_name) for s in TransactionState] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    assert TransactionState.from_kafka_name("PrepareAbort") is S.PREPARE_ABORT
    assert TransactionState.from_kafka_name("prepareabort") is None


def test_only_resting_states_may_expire() -> None:
    assert {s for s in TransactionState if s.expiration_allowed} == {
        S.EMPTY,
        S.COMPLETE_COMMIT,
        S.COMPLETE_ABORT,
    }


def test_epoch_is_exhausted_one_below_the_maximum() -> None:
    assert not is_epoch_exhausted(32765)
    assert is_epoch_exhausted(32766)
    assert is_epoch_exhausted(32767)


def test_partition_for_places_ids_as_kafka_does() -> None:
    # Kafka 4.0 wrote transactional id "my-txn-id" to __transaction_state-11.
    assert partition_for("my-txn-id") == 11
    # Java's "polygenelubricants".hashCode() is Integer.MIN_VALUE; Utils.abs maps it to 0.
    assert partition_for("polygenelubricants") == 0
    assert partition_for("my-txn-id", 7) == partition_for("my-txn-id", 7) < 7


def test_config_reads_kafkas_settings_and_defaults() -> None:
    config = TransactionConfig.from_broker_config(BrokerConfig(broker_id=1))
    assert config == TransactionConfig(
        max_timeout_ms=900_000,
        id_expiration_ms=604_800_000,
        abort_timed_out_interval_ms=10_000,
        remove_expired_interval_ms=3_600_000,
        num_partitions=50,
    )
