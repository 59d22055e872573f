"""Kafka's --reset-offsets rule: each strategy's target, clamped to the log's range."""

import pytest

from weir.coordinator.offset_reset import reset_target


@pytest.mark.parametrize(
    ("strategy", "kwargs", "expected"),
    [
        ("earliest", {}, 10),
        ("latest", {}, 50),
        ("offset", {"amount": 30}, 30),
        ("offset", {"amount": 99}, 50),
        ("shift", {"current": 20, "amount": -5}, 15),
        ("shift", {"current": None, "amount": 5}, 15),
        ("shift", {"current": 12, "amount": -100}, 10),
        ("datetime", {"found": 42}, 42),
        ("by-duration", {"found": -1}, 50),
        ("datetime", {"found": None}, 50),
    ],
)
def test_reset_target_per_strategy_is_clamped_to_the_log(
    strategy: str, kwargs: dict, expected: int
) -> None:
    assert reset_target(strategy, low=10, high=50, **kwargs) == expected


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown reset strategy"):
        reset_target("sideways", low=0, high=1)
