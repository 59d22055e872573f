"""Errors of the coordination layer, each carrying the Kafka error code clients should see.

The metadata store, the registration and the placement raise these; request handlers turn
``error_code`` and ``str(exc)`` into a response without knowing Redis is underneath.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = [
    "BrokerFencedError",
    "DuplicateBrokerError",
    "FencedError",
    "InvalidPartitionsError",
    "InvalidReplicaAssignmentError",
    "InvalidReplicationFactorError",
    "InvalidTopicError",
    "MetadataError",
    "MetadataUnavailableError",
    "RegistrationLostError",
    "TopicExistsError",
    "UnknownTopicError",
]


class MetadataError(Exception):
    """Base class: a metadata operation failed with ``error_code``."""

    error_code: ErrorCode = ErrorCode.unknown_server_error

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class FencedError(MetadataError):
    """The caller's controller epoch is no longer current: another controller took over."""

    error_code = ErrorCode.not_controller


class BrokerFencedError(MetadataError):
    """A newer registration of this broker id exists: this process is a zombie."""

    error_code = ErrorCode.stale_broker_epoch


class RegistrationLostError(BrokerFencedError):
    """The broker's registration vanished (expired and removed, or Redis was reset)."""

    error_code = ErrorCode.broker_id_not_registered


class DuplicateBrokerError(MetadataError):
    """Another live process holds the registration lease for this broker id."""

    error_code = ErrorCode.duplicate_broker_registration

    def __init__(self, message: str, *, lease_remaining_ms: int = 0) -> None:
        super().__init__(message)
        self.lease_remaining_ms = lease_remaining_ms


class TopicExistsError(MetadataError):
    error_code = ErrorCode.topic_already_exists


class UnknownTopicError(MetadataError):
    error_code = ErrorCode.unknown_topic_or_partition


class InvalidTopicError(MetadataError):
    """The name collides with an existing topic ('.' versus '_')."""

    error_code = ErrorCode.invalid_topic_exception


class InvalidPartitionsError(MetadataError):
    error_code = ErrorCode.invalid_partitions


class InvalidReplicationFactorError(MetadataError):
    error_code = ErrorCode.invalid_replication_factor


class InvalidReplicaAssignmentError(MetadataError):
    error_code = ErrorCode.invalid_replica_assignment


class MetadataUnavailableError(MetadataError):
    """Redis could not be reached (or kept changing under an optimistic update)."""

    error_code = ErrorCode.request_timed_out
