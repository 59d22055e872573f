"""Traffic rates for the dashboard from the brokers' cumulative counters."""

from __future__ import annotations

from controlplane.traffic import TrafficMeter


def reading(ms: int, bytes_in: int, bytes_out: int) -> dict[str, int]:
    return {"updated_ms": ms, "bytes_in": bytes_in, "bytes_out": bytes_out}


def test_rates_are_counter_deltas_per_second_between_readings() -> None:
    meter = TrafficMeter()
    assert meter.rates({1: reading(1_000, 100, 50)}) == {
        1: {"bytes_in_per_s": 0.0, "bytes_out_per_s": 0.0}
    }
    assert meter.rates({1: reading(3_000, 2_100, 4_050)}) == {
        1: {"bytes_in_per_s": 1000.0, "bytes_out_per_s": 2000.0}
    }


def test_a_restarted_broker_starts_over_instead_of_a_negative_rate() -> None:
    meter = TrafficMeter()
    meter.rates({2: reading(1_000, 10_000, 10_000)})
    assert meter.rates({2: reading(2_000, 500, 0)})[2] == {
        "bytes_in_per_s": 0.0,
        "bytes_out_per_s": 0.0,
    }
    assert meter.rates({2: reading(3_000, 1_500, 100)})[2] == {
        "bytes_in_per_s": 1000.0,
        "bytes_out_per_s": 100.0,
    }


def test_a_reading_seen_again_repeats_the_last_rate() -> None:
    meter = TrafficMeter()
    meter.rates({3: reading(1_000, 0, 0)})
    assert meter.rates({3: reading(2_000, 4_000, 0)})[3]["bytes_in_per_s"] == 4000.0
    # The monitor ticks twice a second, brokers publish once: the same reading comes again.
    assert meter.rates({3: reading(2_000, 4_000, 0)})[3]["bytes_in_per_s"] == 4000.0
    assert meter.rates({3: reading(3_000, 5_000, 0)})[3]["bytes_in_per_s"] == 1000.0
