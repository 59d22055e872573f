"""The transaction coordinator's channel to partition leaders: WriteTxnMarkers requests.

The coordinator (``weir.transaction_coordinator``) hands this channel the COMMIT or ABORT
markers of a transaction grouped by the broker leading each partition; the channel sends
one WriteTxnMarkers (v1) request per broker over a cached inter-broker connection (the
inter-broker listener and credentials, as the controller channel uses) and answers each
partition's error. A broker that cannot be reached answers every partition with
NOT_LEADER_OR_FOLLOWER, which the coordinator retries after refreshing leadership, as
Kafka's marker channel does. The coordinator's own partitions go the same way: one path,
no special case.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.schema.write_txn_markers.v1 import request as wire
from kio.static.primitive import i16, i32, i64

from weir.client import BrokerClient, BrokerClientError
from weir.transactions import SendMarkers, TopicPartition

if TYPE_CHECKING:
    from weir.metadata_view import MetadataView
    from weir.security.client import ClientSecurity

__all__ = ["MarkerChannel"]

log = logging.getLogger("weir.transactions")

REQUEST_TIMEOUT_S = 30.0


@dataclass(eq=False, repr=False, kw_only=True)
class MarkerChannel:
    """``MarkerSender`` over WriteTxnMarkers to partition leaders."""

    broker_id: int
    view: MetadataView
    security: ClientSecurity | None
    _clients: dict[int, BrokerClient] = field(init=False, default_factory=dict)

    def _client(self, broker_id: int) -> BrokerClient | None:
        endpoint = self.view.endpoint_of(broker_id)
        if endpoint is None:
            return None
        client = self._clients.get(broker_id)
        if client is None or (client.host, client.port) != endpoint:
            client = BrokerClient(
                *endpoint, client_id=f"weir-txn-markers-{self.broker_id}", security=self.security
            )
            self._clients[broker_id] = client
        return client

    async def __call__(
        self, leader_broker_id: int, markers: Sequence[SendMarkers]
    ) -> Sequence[Mapping[TopicPartition, ErrorCode]]:
        unreachable = [
            dict.fromkeys(m.partitions, ErrorCode.not_leader_or_follower) for m in markers
        ]
        client = self._client(leader_broker_id)
        if client is None:
            return unreachable
        request = wire.WriteTxnMarkersRequest(markers=tuple(_marker(m) for m in markers))
        try:
            response = await client.request(request, timeout=REQUEST_TIMEOUT_S)
        except BrokerClientError as exc:
            log.info("WriteTxnMarkers to broker %d failed: %s", leader_broker_id, exc)
            return unreachable
        answers: list[dict[TopicPartition, ErrorCode]] = []
        for asked, result in zip(markers, response.markers, strict=False):
            found = {
                (topic.name, int(p.partition_index)): ErrorCode(p.error_code)
                for topic in result.topics
                for p in topic.partitions
            }
            # A partition the leader did not answer for is retried.
            answers.append(
                {tp: found.get(tp, ErrorCode.not_leader_or_follower) for tp in asked.partitions}
            )
        answers.extend(unreachable[len(answers) :])
        return answers

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()


def _marker(markers: SendMarkers) -> wire.WritableTxnMarker:
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(markers.partitions):
        by_topic.setdefault(topic, []).append(index)
    return wire.WritableTxnMarker(
        producer_id=i64(markers.producer_id),
        producer_epoch=i16(markers.producer_epoch),
        transaction_result=markers.commit,
        topics=tuple(
            wire.WritableTxnMarkerTopic(name=name, partition_indexes=tuple(i32(p) for p in parts))
            for name, parts in by_topic.items()
        ),
        coordinator_epoch=i32(markers.coordinator_epoch),
    )
