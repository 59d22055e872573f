"""Client quota logic on a fake clock: precedence, the sampled window, throttle-time math,
validation and describe filters (``weir.quotas``), and quotas through the metadata image."""

from __future__ import annotations

import math

import pytest

from weir.metadata.image import ClusterImage
from weir.metadata.records import ClientQuotaRecord, record_from_fields
from weir.quotas import (
    InvalidQuotaError,
    QuotaEntity,
    QuotaKind,
    QuotaManager,
    describe_matching,
    validate_alteration,
)

E = QuotaEntity.of
PRODUCE = QuotaKind.PRODUCE


def manager(quotas: dict[QuotaEntity, dict[str, float]], num: int = 11) -> QuotaManager:
    m = QuotaManager(window_num=num, window_size_s=1)
    m.update(quotas)
    return m


# -- precedence -------------------------------------------------------------------------------
LEVELS = [
    (E(user="alice", client_id="app"), ("alice", "app")),
    (E(user="alice", client_id=None), ("alice", "app")),
    (E(user="alice"), ("alice", "")),
    (E(user=None, client_id="app"), ("alice", "app")),
    (E(user=None, client_id=None), ("alice", "app")),
    (E(user=None), ("alice", "")),
    (E(client_id="app"), ("", "app")),
    (E(client_id=None), ("", "app")),
]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_the_most_specific_of_the_eight_levels_wins_with_kafkas_metric_tags(level: int) -> None:
    # Every level from this one down is configured, each with its own value.
    quotas = {entity: {"producer_byte_rate": 1000.0 + i} for i, (entity, _) in enumerate(LEVELS)}
    for entity, _ in LEVELS[:level]:
        del quotas[entity]
    applied = manager(quotas).applied(PRODUCE, "alice", "app")
    assert applied.bound == 1000.0 + level
    assert (applied.user, applied.client_id) == LEVELS[level][1]


def test_each_quota_key_is_looked_up_on_its_own() -> None:
    m = manager(
        {
            E(user="alice"): {"producer_byte_rate": 10.0},
            E(client_id=None): {"request_percentage": 5},
        }
    )
    assert m.applied(QuotaKind.PRODUCE, "alice", "x").bound == 10.0
    assert m.applied(QuotaKind.REQUEST, "alice", "x").bound == 5.0
    assert m.applied(QuotaKind.FETCH, "alice", "x").bound is None
    assert not m.enabled(QuotaKind.FETCH) and m.enabled(QuotaKind.PRODUCE)


def test_no_quota_no_throttle_and_no_sensor() -> None:
    m = manager({E(user="bob"): {"producer_byte_rate": 1.0}})
    assert m.record(PRODUCE, "alice", "app", 10**9, 0) == 0
    assert m.snapshot(0) == []


# -- the window and the throttle time ---------------------------------------------------------
def test_throttle_time_is_kafkas_excess_over_bound_times_window() -> None:
    m = manager({E(client_id=None): {"producer_byte_rate": 1000.0}})
    # 10 windows of 1 s are assumed at first (num - 1): 10_000 bytes is exactly the quota.
    assert m.record(PRODUCE, "u", "c", 10_000, 1_000) == 0
    # 20_000 bytes over 10 s = 2000 B/s: X = (2000 - 1000) / 1000 * 10_000 ms.
    assert m.record(PRODUCE, "u", "c", 10_000, 1_000) == 10_000


def test_the_rate_forgets_samples_older_than_the_window() -> None:
    m = manager({E(client_id=None): {"producer_byte_rate": 100.0}}, num=3)
    assert m.record(PRODUCE, "u", "c", 1_000, 0) > 0
    # 3 samples of 1 s: at 3 s the first sample has expired, the burst is forgotten.
    assert m.record(PRODUCE, "u", "c", 100, 3_000) == 0


def test_a_client_sending_at_its_throttled_pace_converges_on_the_quota() -> None:
    quota = 1000.0
    m = manager({E(client_id=None): {"producer_byte_rate": quota}})
    now, sent = 0, 0
    for _ in range(200):
        sent += 4000
        now += 1 + m.record(PRODUCE, "u", "c", 4000, now)  # the client waits its throttle
    assert sent / (now / 1000) == pytest.approx(quota, rel=0.25)


def test_request_throttle_is_capped_at_one_window_byte_rates_are_not() -> None:
    m = manager({E(client_id=None): {"request_percentage": 1.0, "producer_byte_rate": 1.0}})
    assert m.record(QuotaKind.REQUEST, "u", "c", 1000.0, 0) == 1000
    assert m.record(PRODUCE, "u", "c", 1000.0, 0) > 1000


def test_clients_under_a_default_quota_have_separate_budgets_a_user_quota_shares_one() -> None:
    m = manager(
        {
            E(client_id=None): {"producer_byte_rate": 100.0},
            E(user="ann"): {"producer_byte_rate": 100.0},
        }
    )
    assert m.record(PRODUCE, "x", "a", 5_000, 0) > 0
    assert m.record(PRODUCE, "x", "b", 500, 0) == 0  # another client id: its own rate
    assert m.record(PRODUCE, "ann", "a", 1_000, 0) == 0
    assert m.record(PRODUCE, "ann", "b", 1_000, 0) > 0  # ann's clients share her quota


def test_unrecord_takes_back_a_throttled_fetch() -> None:
    m = manager({E(client_id=None): {"consumer_byte_rate": 100.0}})
    assert m.record(QuotaKind.FETCH, "u", "c", 5_000, 0) > 0
    m.unrecord(QuotaKind.FETCH, "u", "c", 5_000, 0)
    assert m.record(QuotaKind.FETCH, "u", "c", 500, 0) == 0


def test_max_value_in_window_caps_a_fetch_at_the_quota_over_num_minus_one_windows() -> None:
    m = manager({E(client_id=None): {"consumer_byte_rate": 100.0}})
    assert m.max_value_in_window(QuotaKind.FETCH, "u", "c") == 1_000
    assert m.max_value_in_window(QuotaKind.PRODUCE, "u", "c") == math.inf


def test_snapshot_reports_rate_quota_and_throttling_per_entity_and_expires_idle_ones() -> None:
    m = manager({E(client_id=None): {"producer_byte_rate": 100.0}})
    throttle = m.record(PRODUCE, "u", "c", 5_000, 0)
    m.throttled(PRODUCE, "u", "c", throttle, 0)
    (figures,) = m.snapshot(0)
    assert figures["type"] == "Produce" and (figures["user"], figures["client_id"]) == ("", "c")
    assert figures["quota"] == 100.0 and figures["rate"] == 500.0
    assert figures["throttled_requests"] == 1 and figures["throttle_time_ms_total"] == throttle
    assert m.snapshot(3_600_000) == []


# -- validation and describe ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("entity", "ops", "message"),
    [
        (E(user="a"), [("bogus", 1.0, False)], "Invalid configuration key bogus"),
        (E(user="a"), [("producer_byte_rate", -5.0, False)], "must be a positive value"),
        (E(user="a"), [("producer_byte_rate", 1.5, False)], "must be a Long value"),
        (E(user="a"), [("controller_mutation_rate", 1.0, False)], "not supported"),
        (QuotaEntity(()), [], "Invalid empty client quota entity"),
        (QuotaEntity((("group", "g"),)), [], "Unhandled client quota entity type: group"),
        (E(user=""), [], "Empty user not supported"),
        (QuotaEntity((("user", "a"), ("user", "b"))), [], "Duplicate entity type"),
    ],
)
def test_alterations_kafka_refuses_are_refused_with_its_message(
    entity: QuotaEntity, ops: list[tuple[str, float, bool]], message: str
) -> None:
    with pytest.raises(InvalidQuotaError, match=message):
        validate_alteration(entity, ops)


def test_a_valid_alteration_sets_and_removes() -> None:
    changes = validate_alteration(
        E(user="a", client_id=None),
        [("producer_byte_rate", 1024.0, False), ("request_percentage", 0.0, True)],
    )
    assert changes == {"producer_byte_rate": 1024.0, "request_percentage": None}


QUOTAS = {
    E(user="alice"): {"producer_byte_rate": 1.0},
    E(user=None): {"producer_byte_rate": 2.0},
    E(user="alice", client_id="app"): {"producer_byte_rate": 3.0},
    E(client_id="app"): {"consumer_byte_rate": 4.0},
}


@pytest.mark.parametrize(
    ("components", "strict", "expected"),
    [
        ([("user", 0, "alice")], True, [E(user="alice")]),
        ([("user", 0, "alice")], False, [E(user="alice"), E(user="alice", client_id="app")]),
        ([("user", 1, None)], True, [E(user=None)]),
        ([("user", 2, None)], True, [E(user="alice")]),
        ([("client-id", 0, "app")], True, [E(client_id="app")]),
        ([], False, list(QUOTAS)),
    ],
)
def test_describe_filters_match_as_kafkas(
    components: list[tuple[str, int, str | None]], strict: bool, expected: list[QuotaEntity]
) -> None:
    found = [entity for entity, _ in describe_matching(QUOTAS, components, strict=strict)]
    assert sorted(found, key=QuotaEntity.to_key) == sorted(expected, key=QuotaEntity.to_key)


def test_a_bad_describe_filter_is_invalid_request() -> None:
    with pytest.raises(InvalidQuotaError, match="Duplicate user filter component"):
        describe_matching(QUOTAS, [("user", 0, "a"), ("user", 0, "b")], strict=False)


# -- through the metadata image ---------------------------------------------------------------
def test_quota_records_round_trip_the_log_and_move_the_image() -> None:
    entity = E(user="alice", client_id=None)
    record = ClientQuotaRecord(entity=entity.components, key="producer_byte_rate", value="1024.0")
    assert record_from_fields(record.to_fields()) == record
    image = ClusterImage().apply([record])
    assert image.client_quotas == {entity: {"producer_byte_rate": 1024.0}}
    removed = ClientQuotaRecord(entity=entity.components, key="producer_byte_rate", value=None)
    assert image.apply([removed]).client_quotas == {}
    state = ClusterImage.from_state(
        stream_id="0-0",
        topics={},
        registrations={},
        configs={},
        client_quotas={entity.to_key(): '{"producer_byte_rate":"1024.0"}'},
    )
    assert state.client_quotas == image.client_quotas
