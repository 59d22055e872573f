"""The controller channel: how a broker that is not the controller asks the controller.

A broker reaches the controller as it reaches any peer: on the inter-broker listener
(``MetadataView.endpoint_of``), logging in with the inter-broker credentials. One
``BrokerClient`` per controller id is kept and replaced when that broker's endpoint moves.
Four conversations go this way, as in Kafka:

* admin requests a client sent to this broker (CreateTopics, DeleteTopics, ...), forwarded
  as they came (``forward``);
* topic auto-creation (Metadata, FindCoordinator) as CreateTopics (``create_topic``), like
  Kafka's AutoTopicCreationManager;
* config changes as IncrementalAlterConfigs (``alter_configs``);
* a leader's ISR proposal as AlterPartition (``alter_partition``).

Failures never raise: the caller gets the error a client would (NOT_CONTROLLER,
LEADER_NOT_AVAILABLE) or None, and retries as Kafka's clients do.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kio.schema.alter_partition.v2 import request as alter_partition
from kio.schema.create_topics.v7 import request as create_topics
from kio.schema.errors import ErrorCode
from kio.schema.incremental_alter_configs.v1 import request as incremental_alter_configs

from weir.client import BrokerClient, BrokerClientError

if TYPE_CHECKING:
    from weir.controller import IsrChangeRequest
    from weir.metadata_view import MetadataView
    from weir.partition import Partition
    from weir.security.client import ClientSecurity

__all__ = ["ControllerChannel"]

log = logging.getLogger("weir.broker")


@dataclass(eq=False, repr=False, kw_only=True)
class ControllerChannel:
    """Requests from this broker to the controller, over a cached connection."""

    broker_id: int
    view: MetadataView
    security: ClientSecurity | None
    broker_epoch: Callable[[], int]
    _clients: dict[int, BrokerClient] = field(init=False, default_factory=dict)

    def _client(self) -> BrokerClient | None:
        """A connection to the controller on the inter-broker listener."""
        controller = self.view.controller_id()
        if controller not in self.view.image.brokers:
            return None
        endpoint = self.view.endpoint_of(controller)
        if endpoint is None:
            return None
        client = self._clients.get(controller)
        if client is None or (client.host, client.port) != endpoint:
            client = BrokerClient(
                *endpoint,
                client_id=f"weir-broker-{self.broker_id}",
                security=self.security,
            )
            self._clients[controller] = client
        return client

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()

    async def forward(self, body: Any, timeout_s: float) -> Any | None:
        """Send an admin request on to the controller; its response, or None if unreachable."""
        if self.view.controller_id() == self.broker_id:
            return None
        client = self._client()
        if client is None:
            return None
        try:
            return await client.request(body, timeout=timeout_s)
        except BrokerClientError as exc:
            log.warning("forwarding to the controller failed: %s", exc)
            return None

    async def create_topic(
        self, name: str, num_partitions: int, replication_factor: int, configs: dict[str, str]
    ) -> ErrorCode:
        """Ask the controller to create ``name`` (auto-creation); its error code."""
        client = self._client()
        if client is None:
            return ErrorCode.leader_not_available
        request = create_topics.CreateTopicsRequest(
            topics=(
                create_topics.CreatableTopic(
                    name=name,
                    num_partitions=num_partitions,
                    replication_factor=replication_factor,
                    assignments=(),
                    configs=tuple(
                        create_topics.CreatableTopicConfig(name=k, value=v)
                        for k, v in configs.items()
                    ),
                ),
            ),
            timeout=timedelta(seconds=5),
            validate_only=False,
        )
        try:
            response = await client.request(request, timeout=10)
        except BrokerClientError as exc:
            log.warning("auto-creating %s on the controller failed: %s", name, exc)
            return ErrorCode.leader_not_available
        return ErrorCode(response.topics[0].error_code)

    async def alter_configs(
        self, resource_type: int, resource_name: str, changes: list[tuple[str, int, str | None]]
    ) -> tuple[ErrorCode, str | None]:
        """Send a config change to the controller as IncrementalAlterConfigs."""
        client = self._client()
        if client is None:
            return ErrorCode.not_controller, "no controller is available; retry"
        request = incremental_alter_configs.IncrementalAlterConfigsRequest(
            resources=(
                incremental_alter_configs.AlterConfigsResource(
                    resource_type=resource_type,
                    resource_name=resource_name,
                    configs=tuple(
                        incremental_alter_configs.AlterableConfig(
                            name=name, config_operation=op, value=value
                        )
                        for name, op, value in changes
                    ),
                ),
            ),
            validate_only=False,
        )
        try:
            response = await client.request(request, timeout=10)
        except BrokerClientError as exc:
            return ErrorCode.not_controller, f"forwarding to the controller failed: {exc}"
        result = response.responses[0]
        return ErrorCode(result.error_code), result.error_message

    async def alter_partition(self, partition: Partition, request: IsrChangeRequest) -> ErrorCode:
        """A leader's ISR proposal as AlterPartition; the partition's error code."""
        client = self._client()
        if client is None:
            return ErrorCode.not_controller
        body = alter_partition.AlterPartitionRequest(
            broker_id=self.broker_id,
            broker_epoch=self.broker_epoch(),
            topics=(
                alter_partition.TopicData(
                    topic_id=uuid.UUID(partition.topic_id),
                    partitions=(
                        alter_partition.PartitionData(
                            partition_index=partition.index,
                            leader_epoch=request.leader_epoch,
                            new_isr=request.new_isr,
                            leader_recovery_state=0,
                            partition_epoch=request.partition_epoch,
                        ),
                    ),
                ),
            ),
        )
        response = await client.request(body, timeout=10)
        if response.error_code != ErrorCode.none:
            return ErrorCode(response.error_code)
        return ErrorCode(response.topics[0].partitions[0].error_code)
