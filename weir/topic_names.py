"""Kafka's rules for topic names (``org.apache.kafka.common.internals.Topic``)."""

from __future__ import annotations

import re

__all__ = ["MAX_NAME_LENGTH", "InvalidTopicName", "validate_topic_name"]

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
# Topics clients may not delete: the schema registry's store (Confluent's ``_schemas``) holds
# every schema id producers and consumers depend on.
UNDELETABLE_TOPICS = frozenset({"_schemas"})


class InvalidTopicName(ValueError):
    """The name breaks Kafka's rules (INVALID_TOPIC_EXCEPTION)."""


def validate_topic_name(name: str) -> None:
    """Raise InvalidTopicName with Kafka's wording when ``name`` is not a legal topic."""
    if not name:
        raise InvalidTopicName("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicName('Topic name cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicName(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name: {name}"
        )
    if not _LEGAL.match(name):
        raise InvalidTopicName(
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )


def collides(a: str, b: str) -> bool:
    """Kafka forbids topics that differ only by '.' versus '_' (metric names collide)."""
    return a != b and a.replace(".", "_") == b.replace(".", "_")
