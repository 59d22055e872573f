"""Reading the error context of dead letters from their headers (pure, no cluster)."""

from __future__ import annotations

import pytest

from dlq.headers import error_context, has_error_headers, replay_headers

CONNECT = [
    ("app", b"kept"),
    ("__connect.errors.topic", b"orders"),
    ("__connect.errors.partition", b"2"),
    ("__connect.errors.offset", b"1234567890123"),
    ("__connect.errors.connector.name", b"jdbc-sink"),
    ("__connect.errors.task.id", b"0"),
    ("__connect.errors.stage", b"VALUE_CONVERTER"),
    ("__connect.errors.class.name", b"io.confluent.connect.avro.AvroConverter"),
    ("__connect.errors.exception.class.name", b"org.apache.kafka.connect.errors.DataException"),
    ("__connect.errors.exception.message", b"Unknown magic byte!"),
    ("__connect.errors.exception.stacktrace", b"DataException: Unknown magic byte!\n\tat ..."),
]
SPRING = [
    ("kafka_dlt-original-topic", b"payments"),
    ("kafka_dlt-original-partition", (5).to_bytes(4, "big")),
    ("kafka_dlt-original-offset", (70_000).to_bytes(8, "big")),
    ("kafka_dlt-original-consumer-group", b"billing"),
    ("kafka_dlt-exception-fqcn", b"java.lang.IllegalStateException"),
    ("kafka_dlt-exception-message", b"amount < 0"),
    ("kafka_dlt-exception-stacktrace", b"java.lang.IllegalStateException: amount < 0"),
    ("retry_topic-attempts", (3).to_bytes(4, "big")),
]


def test_kafka_connect_headers_give_the_whole_context_with_numbers_from_text() -> None:
    found = error_context(CONNECT)
    assert found.as_dict() == {
        "convention": "connect",
        "original_topic": "orders",
        "original_partition": 2,
        "original_offset": 1234567890123,
        "exception_class": "org.apache.kafka.connect.errors.DataException",
        "exception_message": "Unknown magic byte!",
        "stacktrace": "DataException: Unknown magic byte!\n\tat ...",
        "connector": "jdbc-sink",
        "task": "0",
        "stage": "VALUE_CONVERTER",
        "consumer_group": None,
        "attempts": None,
    }


def test_spring_headers_hold_big_endian_numbers_and_the_attempt_count() -> None:
    found = error_context(SPRING)
    assert found.convention == "spring"
    assert (found.original_topic, found.original_partition, found.original_offset) == (
        "payments",
        5,
        70_000,
    )
    assert (found.exception_class, found.exception_message) == (
        "java.lang.IllegalStateException",
        "amount < 0",
    )
    assert (found.consumer_group, found.attempts) == ("billing", 3)


def test_records_without_error_headers_have_an_empty_context() -> None:
    assert not has_error_headers([("trace-id", b"abc")])
    assert not has_error_headers(None)
    assert error_context([("trace-id", b"abc")]).as_dict() == {
        **{k: None for k in error_context([]).as_dict()},
    }
    assert has_error_headers(CONNECT) and has_error_headers(SPRING)


def test_malformed_numbers_are_unknown_not_errors() -> None:
    found = error_context(
        [("__connect.errors.partition", b"two"), ("__connect.errors.offset", None)]
    )
    assert (found.original_partition, found.original_offset) == (None, None)


def test_replay_headers_drop_the_failure_keep_the_rest_and_count_replays() -> None:
    once = replay_headers(CONNECT, source="orders.DLT/0/7")
    assert once == [
        ("app", b"kept"),
        ("weir.replay.count", b"1"),
        ("weir.replay.source", b"orders.DLT/0/7"),
    ]
    # Failing again, the record comes back with the replay headers copied by the writer.
    again = replay_headers([*CONNECT, *once[1:]], source="orders.DLT/0/9")
    assert again[-2:] == [("weir.replay.count", b"2"), ("weir.replay.source", b"orders.DLT/0/9")]
    assert error_context([*CONNECT, *once[1:]]).attempts == 2
    kept = replay_headers(SPRING, source="x/0/1", keep_error_headers=True)
    assert [name for name, _ in kept][: len(SPRING)] == [name for name, _ in SPRING]


@pytest.mark.parametrize(
    ("original_topic", "exception", "expected"),
    [
        (None, None, True),
        ("orders", None, True),
        ("payments", None, False),
        (None, "magic BYTE", True),
        (None, "DataException", True),
        (None, "timeout", False),
        ("orders", "timeout", False),
    ],
)
def test_filters_match_the_original_topic_exactly_and_the_exception_as_text(
    original_topic: str | None, exception: str | None, expected: bool
) -> None:
    found = error_context(CONNECT)
    assert found.matches(original_topic=original_topic, exception=exception) is expected


def test_origin_reads_only_the_original_topic_and_partition_of_either_convention() -> None:
    from dlq.headers import origin

    assert origin(CONNECT) == ("orders", 2)
    assert origin(SPRING) == ("payments", 5)
    assert origin([("trace", b"x")]) == (None, None)
    assert origin(None) == (None, None)
