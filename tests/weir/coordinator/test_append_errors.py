"""What clients are told when a coordinator write to ``__consumer_offsets`` fails."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode as E

from weir.coordinator.rebalance import append_error_to_response_error


@pytest.mark.parametrize(
    ("append_error", "client_error"),
    [
        (E.unknown_topic_or_partition, E.coordinator_not_available),
        (E.not_enough_replicas, E.coordinator_not_available),
        (E.not_enough_replicas_after_append, E.coordinator_not_available),
        (E.request_timed_out, E.coordinator_not_available),
        (E.not_leader_or_follower, E.not_coordinator),
        (E.kafka_storage_error, E.not_coordinator),
        (E.message_too_large, E.unknown_server_error),
        (E.record_list_too_large, E.unknown_server_error),
        (E.invalid_fetch_size, E.unknown_server_error),
        (E.corrupt_message, E.corrupt_message),
    ],
)
def test_append_errors_map_to_retriable_coordinator_errors(
    append_error: E, client_error: E
) -> None:
    assert append_error_to_response_error(append_error) is client_error
