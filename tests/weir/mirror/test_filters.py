"""MM2's default topic and group filters (pure logic)."""

from __future__ import annotations

import pytest

from weir.mirror.filters import (
    GROUPS_EXCLUDE_DEFAULT,
    GROUPS_INCLUDE_DEFAULT,
    TOPICS_EXCLUDE_DEFAULT,
    TOPICS_INCLUDE_DEFAULT,
    NameFilter,
    parse_list,
)

TOPICS = NameFilter.from_lists(
    TOPICS_INCLUDE_DEFAULT, TOPICS_EXCLUDE_DEFAULT, include_key="topics", exclude_key="x"
)
GROUPS = NameFilter.from_lists(
    GROUPS_INCLUDE_DEFAULT, GROUPS_EXCLUDE_DEFAULT, include_key="groups", exclude_key="x"
)


def test_parse_list_is_kafkas_list_type() -> None:
    assert parse_list(" a , b,c ") == ("a", "b", "c")
    assert parse_list("   ") == ()


@pytest.mark.parametrize("topic", ["orders", "east.orders", "internal-orders"])
def test_default_topic_filter_includes(topic: str) -> None:
    assert TOPICS.matches(topic)


@pytest.mark.parametrize(
    "topic", ["mm2-offsets.a.internal", "connect-status-internal", "orders.replica", "__x"]
)
def test_default_topic_filter_excludes(topic: str) -> None:
    assert not TOPICS.matches(topic)


@pytest.mark.parametrize("group", ["console-consumer-123", "connect-mirror", "__internal"])
def test_default_group_filter_excludes(group: str) -> None:
    assert not GROUPS.matches(group)
    assert GROUPS.matches("billing")


def test_patterns_must_match_the_whole_name() -> None:
    only = NameFilter.from_lists("orders, pay.*", "", include_key="t", exclude_key="e")
    assert only.matches("orders")
    assert only.matches("payments")
    assert not only.matches("orders-v2")
    assert not only.matches("old-payments")


def test_blank_include_matches_nothing_and_blank_exclude_excludes_nothing() -> None:
    assert not NameFilter.from_lists("", "", include_key="t", exclude_key="e").matches("a")
    assert NameFilter.from_lists(".*", "", include_key="t", exclude_key="e").matches("__x")


def test_bad_regex_names_the_key() -> None:
    with pytest.raises(ValueError, match=r"^A->B\.topics: invalid regular expression"):
        NameFilter.from_lists("orders, (", "", include_key="A->B.topics", exclude_key="e")
