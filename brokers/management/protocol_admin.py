"""Admin requests confluent-kafka's AdminClient lacks, sent over the Kafka protocol.

``reassign-partitions`` and ``leader-election`` need AlterPartitionReassignments,
ListPartitionReassignments and ElectLeaders. These helpers find the controller with a
Metadata request to a bootstrap broker and send the request there with Weir's own kio-based
client, so the commands work against any cluster that speaks the protocol. The client
authenticates as the tool's :class:`~brokers.management.kafka_admin.ToolTarget` says (its
``--command-config``, else the control plane's ``WEIR_KAFKA_*`` settings).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from django.core.management.base import CommandError
from kio.schema.metadata.v12.request import MetadataRequest

from brokers.management.kafka_admin import ToolTarget
from weir.client import BrokerClient, BrokerClientError

__all__ = [
    "ClusterInfo",
    "cluster_info",
    "send_to_any_broker",
    "send_to_broker",
    "send_to_controller",
    "send_to_coordinator",
]


class ClusterInfo:
    """Brokers, controller and topic assignments as Metadata reports them."""

    def __init__(self, response: Any) -> None:
        self.brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
        self.controller_id = response.controller_id
        self.topics: dict[str, dict[int, list[int]]] = {
            t.name: {p.partition_index: list(p.replica_nodes) for p in t.partitions}
            for t in response.topics
            if t.error_code == 0
        }
        self.leaders: dict[str, dict[int, int]] = {
            t.name: {p.partition_index: p.leader_id for p in t.partitions}
            for t in response.topics
            if t.error_code == 0
        }


def _client(target: ToolTarget, host: str, port: int) -> BrokerClient:
    """A kio client of one broker with the tool's credentials."""
    return target.security.broker_client(host, port, client_id="weir-admin")


def _bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    endpoints = []
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise CommandError(f"--bootstrap-server expects HOST:PORT[,HOST:PORT], got {item!r}")
        endpoints.append((host, int(port)))
    return endpoints


async def _metadata(target: ToolTarget) -> ClusterInfo:
    errors = []
    for host, port in _bootstrap(target.bootstrap):
        client = _client(target, host, port)
        try:
            response = await client.request(
                MetadataRequest(
                    topics=None,
                    allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False,
                ),
                timeout=10,
            )
            return ClusterInfo(response)
        except BrokerClientError as exc:
            errors.append(str(exc))
        finally:
            await client.close()
    raise CommandError(f"no broker answered: {'; '.join(errors)}")


def cluster_info(target: ToolTarget) -> ClusterInfo:
    return asyncio.run(_metadata(target))


async def _request(target: ToolTarget, host: str, port: int, body: Any, timeout: float) -> Any:
    """One request to one broker on a connection of its own; its errors as CommandError."""
    client = _client(target, host, port)
    try:
        return await client.request(body, timeout=timeout)
    except BrokerClientError as exc:
        raise CommandError(str(exc)) from None
    finally:
        await client.close()


async def _send(target: ToolTarget, body: Any, timeout: float) -> Any:
    info = await _metadata(target)
    endpoint = info.brokers.get(info.controller_id)
    if endpoint is None:
        raise CommandError("the cluster has no controller right now; retry in a few seconds")
    return await _request(target, *endpoint, body, timeout)


def send_to_controller(target: ToolTarget, body: Any, *, timeout: float = 30.0) -> Any:
    """Send a kio request to the controller and return its response."""
    return asyncio.run(_send(target, body, timeout))


async def _send_node(target: ToolTarget, node_id: int, body: Any, timeout: float) -> Any:
    info = await _metadata(target)
    endpoint = info.brokers.get(node_id)
    if endpoint is None:
        raise CommandError(f"broker {node_id} is not in the cluster's metadata")
    return await _request(target, *endpoint, body, timeout)


def send_to_broker(target: ToolTarget, node_id: int, body: Any, *, timeout: float = 30.0) -> Any:
    """Send a kio request to broker ``node_id`` (found in the cluster's metadata)."""
    return asyncio.run(_send_node(target, node_id, body, timeout))


async def _send_any(target: ToolTarget, body: Any, timeout: float) -> Any:
    errors = []
    for host, port in _bootstrap(target.bootstrap):
        client = _client(target, host, port)
        try:
            return await client.request(body, timeout=timeout)
        except BrokerClientError as exc:
            errors.append(f"{host}:{port}: {exc}")
        finally:
            await client.close()
    raise CommandError(f"no broker answered: {'; '.join(errors)}")


def send_to_any_broker(target: ToolTarget, body: Any, *, timeout: float = 30.0) -> Any:
    """Send a kio request to the first bootstrap broker that answers."""
    return asyncio.run(_send_any(target, body, timeout))


async def _send_coordinator(target: ToolTarget, group: str, body: Any, timeout: float) -> Any:
    from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

    found = await _send_any(
        target, FindCoordinatorRequest(key_type=0, coordinator_keys=(group,)), timeout
    )
    (coordinator,) = found.coordinators
    if coordinator.error_code != 0:
        raise CommandError(f"no coordinator for group {group}: error {coordinator.error_code}")
    return await _request(target, coordinator.host, coordinator.port, body, timeout)


def send_to_coordinator(target: ToolTarget, group: str, body: Any, *, timeout: float = 30.0) -> Any:
    """Send a kio request to the coordinator of ``group`` (found with FindCoordinator)."""
    return asyncio.run(_send_coordinator(target, group, body, timeout))


def request_timeout(seconds: float) -> timedelta:
    return timedelta(seconds=seconds)
