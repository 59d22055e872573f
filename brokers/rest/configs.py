"""Config entries for topics and brokers: DescribeConfigs and IncrementalAlterConfigs.

Both go over the Kafka protocol (kio requests through the cluster gateway) rather than
confluent-kafka's AdminClient, because librdkafka cannot address the cluster-wide broker
default resource (an empty broker name) that ``/broker-configs`` needs. Topic requests go to
the controller (it applied the topic's creation first, so a topic created a moment ago is
known there); a broker's own configs are described by that broker, as Kafka requires.

Entries come back in Confluent's shape: ``name, value, is_default, is_read_only,
is_sensitive, source, synonyms[{name, value, source}]`` (sensitive values are null). The
broker's validation message (``Invalid value abc for configuration retention.ms: ...``) is
passed through as a 400.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.static.primitive import i8

from controlplane.cluster import gateway
from controlplane.errors import BadRequest, NotFound
from controlplane.rest_v3 import raise_for_kafka_error

__all__ = [
    "ConfigEntry",
    "ConfigOp",
    "alter_configs_request",
    "config_describe",
    "configs_alter",
    "describe_configs_request",
]

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
OPERATIONS = {"SET": 0, "DELETE": 1, "APPEND": 2, "SUBTRACT": 3}
SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}
Kind = Literal["topic", "broker"]


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One config as DescribeConfigs reports it, in Confluent's vocabulary."""

    name: str
    value: str | None
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    source: str
    synonyms: tuple[dict[str, Any], ...]

    def fields(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": None if self.is_sensitive else self.value,
            "is_default": self.is_default,
            "is_read_only": self.is_read_only,
            "is_sensitive": self.is_sensitive,
            "source": self.source,
            "synonyms": list(self.synonyms),
        }


@dataclass(frozen=True, slots=True)
class ConfigOp:
    """One alteration: SET ``name`` to ``value``, or DELETE it (back to its default)."""

    name: str
    operation: str
    value: str | None = None


# -- the requests (also sent by ``manage.py configs`` to its own --bootstrap-server) ------------
def describe_configs_request(
    *, kind: Kind, name: str, keys: list[str] | None = None
) -> DescribeConfigsRequest:
    """DescribeConfigs (with synonyms) of one topic or broker (``name`` "" = cluster default)."""
    return DescribeConfigsRequest(
        resources=(
            DescribeConfigsResource(
                resource_type=i8(RESOURCE_TOPIC if kind == "topic" else RESOURCE_BROKER),
                resource_name=name,
                configuration_keys=tuple(keys) if keys is not None else None,
            ),
        ),
        include_synonyms=True,
        include_documentation=False,
    )


def alter_configs_request(
    *, kind: Kind, name: str, operations: list[ConfigOp], validate_only: bool = False
) -> IncrementalAlterConfigsRequest:
    """IncrementalAlterConfigs of one resource; 400 for an unknown operation or a SET
    without a value."""
    configs = []
    for op in operations:
        code = OPERATIONS.get(op.operation.upper())
        if code is None:
            raise BadRequest(
                f"unknown operation {op.operation!r} for config {op.name!r}: "
                f"expected one of {', '.join(OPERATIONS)}"
            )
        if code != OPERATIONS["DELETE"] and op.value is None:
            raise BadRequest(f"config {op.name!r}: value is required for {op.operation.upper()}")
        configs.append(
            AlterableConfig(
                name=op.name,
                config_operation=i8(code),
                value=None if code == OPERATIONS["DELETE"] else op.value,
            )
        )
    return IncrementalAlterConfigsRequest(
        resources=(
            AlterConfigsResource(
                resource_type=i8(RESOURCE_TOPIC if kind == "topic" else RESOURCE_BROKER),
                resource_name=name,
                configs=tuple(configs),
            ),
        ),
        validate_only=validate_only,
    )


def _send(kind: Kind, name: str, body: Any) -> Any:
    if kind == "broker" and name:
        return gateway().request_broker(int(name), body)
    if kind == "topic":
        return gateway().request_controller(body)
    return gateway().request_any(body)


def _label(kind: Kind, name: str) -> str:
    if kind == "topic":
        return f"topic {name!r}"
    return f"broker {name}" if name else "the cluster-wide broker defaults"


def config_describe(*, kind: Kind, name: str, keys: list[str] | None = None) -> list[ConfigEntry]:
    """Every config of a topic / broker (``name`` "" = cluster default), sorted by name."""
    request = describe_configs_request(kind=kind, name=name, keys=keys)
    (result,) = _send(kind, name, request).results
    raise_for_kafka_error(result.error_code, result.error_message, what=_label(kind, name))
    entries = [
        ConfigEntry(
            name=c.name,
            value=c.value,
            is_default=c.config_source == 5,
            is_read_only=c.read_only,
            is_sensitive=c.is_sensitive,
            source=SOURCES.get(c.config_source, "UNKNOWN"),
            synonyms=tuple(
                {"name": s.name, "value": s.value, "source": SOURCES.get(s.source, "UNKNOWN")}
                for s in c.synonyms
            ),
        )
        for c in result.configs
    ]
    return sorted(entries, key=lambda e: e.name)


def config_get(*, kind: Kind, name: str, config: str) -> ConfigEntry:
    """One named config, or 404 naming it."""
    found = config_describe(kind=kind, name=name, keys=[config])
    for entry in found:
        if entry.name == config:
            return entry
    raise NotFound(f"config {config!r} not found for {_label(kind, name)}")


def configs_alter(
    *, kind: Kind, name: str, operations: list[ConfigOp], validate_only: bool = False
) -> None:
    """Apply SET / DELETE operations atomically (IncrementalAlterConfigs)."""
    if not operations:
        raise BadRequest("no config operations given: data must list at least one config")
    request = alter_configs_request(
        kind=kind, name=name, operations=operations, validate_only=validate_only
    )
    (result,) = _send(kind, name, request).responses
    raise_for_kafka_error(result.error_code, result.error_message, what=_label(kind, name))
