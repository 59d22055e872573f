"""Building kio response entities across versions without per-version code.

kio generates one dataclass per message version, and fields come and go between versions.
Handlers pass every field any version may want; ``make`` keeps the ones this version's class
has. Nested classes are found by name in the response class's module. ``respond`` builds the
response to a request (its API key and version pick the class) and says "no throttle" (Weir
never throttles clients) and "no request-level error" unless the handler gives one, so each is
said here once. ``per_partition`` is the shape every topic/partition request answers in: one
result per requested partition, grouped by topic as asked, and a topic the principal may not
touch denied as a whole.
``by_topic`` groups partition results that come as a flat list.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from datetime import timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

if TYPE_CHECKING:
    from weir.protocol.codec import Request

__all__ = [
    "CLUSTER_DENIED",
    "NO_THROTTLE",
    "by_topic",
    "cluster_denied",
    "make",
    "per_partition",
    "respond",
    "response_class",
    "response_types",
    "types_of",
]

NO_THROTTLE = timedelta(0)
CLUSTER_DENIED = "Cluster authorization failed."  # Kafka's message for the code


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def make(cls: type, /, **values: Any) -> Any:
    """Instantiate ``cls`` with the subset of ``values`` it declares."""
    if cls is _absent:
        return None
    names = _field_names(cls)
    return cls(**{k: v for k, v in values.items() if k in names})


@cache
def response_class(api_key: int, api_version: int) -> type:
    return load_response_schema(api_key, api_version)


class _Types:
    """Attribute access to the nested entity classes of one response version."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        # A nested type that this version lacks belongs to a field it lacks too: building it
        # yields None, and ``make`` drops that field from the parent.
        return getattr(self._module, name, _absent)


def _absent(**_: Any) -> None:
    return None


@cache
def response_types(api_key: int, api_version: int) -> _Types:
    return _Types(sys.modules[response_class(api_key, api_version).__module__])


def types_of(request: Request) -> _Types:
    """The nested entity classes of the response to ``request``."""
    return response_types(request.api_key, request.api_version)


def respond(request: Request, /, **fields: Any) -> Any:
    """The response to ``request`` with ``fields`` (those its version has), never throttled.

    A response with a request-level ``error_code`` and ``error_message`` answers NONE and no
    message unless ``fields`` say otherwise (per-partition errors are the handler's to give).
    """
    values = {"error_code": ErrorCode.none, "error_message": None, **fields}
    return make(
        response_class(request.api_key, request.api_version), throttle_time=NO_THROTTLE, **values
    )


def cluster_denied(request: Request, /, **empty: Any) -> Any:
    """The response to a request the principal may not make on the cluster:
    CLUSTER_AUTHORIZATION_FAILED with Kafka's message, and ``empty`` as the (empty) rest."""
    return respond(
        request,
        error_code=ErrorCode.cluster_authorization_failed,
        error_message=CLUSTER_DENIED,
        **empty,
    )


def per_partition(
    request_topics: Iterable[Any],
    *,
    topic_cls: type,
    partition_cls: type,
    allowed: Callable[[str], bool],
    answer: Callable[[str, Any], Mapping[str, Any]],
    denied: Mapping[str, Any],
    name: str = "name",
    index: str = "partition_index",
) -> tuple[Any, ...]:
    """One ``topic_cls`` per requested topic holding one ``partition_cls`` per requested
    partition, in request order.

    ``allowed(topic)`` is asked once per topic; a denied topic's partitions all answer
    ``denied`` and are never looked at. Otherwise ``answer(topic, partition)`` gives the
    partition's fields. ``name`` and ``index`` are the topic-name and partition-index field
    names, which the request and response share.
    """
    results = []
    for topic in request_topics:
        topic_name = getattr(topic, name)
        ok = allowed(topic_name)
        partitions = tuple(
            make(
                partition_cls,
                **{index: getattr(p, index)},
                **(answer(topic_name, p) if ok else denied),
            )
            for p in topic.partitions
        )
        results.append(make(topic_cls, **{name: topic_name}, partitions=partitions))
    return tuple(results)


def by_topic(
    entries: Iterable[tuple[str, Any]], topic: Callable[[str, tuple[Any, ...]], Any]
) -> tuple[Any, ...]:
    """(topic name, partition entry) pairs grouped under one entry per topic, topics in the
    order first seen; ``topic(name, partitions)`` builds a topic's entry."""
    grouped: dict[str, list[Any]] = {}
    for name, entry in entries:
        grouped.setdefault(name, []).append(entry)
    return tuple(topic(name, tuple(parts)) for name, parts in grouped.items())
