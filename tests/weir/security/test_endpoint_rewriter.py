"""Kafka's rule for answers naming brokers: each broker by its endpoint on the listener the
request came in on (``endpoint_rewriter``); the inter-broker listener choice."""

from __future__ import annotations

from datetime import timedelta

import pytest
from kio.schema.describe_cluster.v0.response import DescribeClusterBroker, DescribeClusterResponse
from kio.schema.find_coordinator.v1.response import FindCoordinatorResponse as FindCoordinatorV1
from kio.schema.find_coordinator.v4.response import Coordinator, FindCoordinatorResponse
from kio.schema.metadata.v12.response import MetadataResponse, MetadataResponseBroker

from weir.security.listeners import (
    ListenerError,
    ListenerSpec,
    endpoint_rewriter,
    inter_broker_listener,
    resolve_listeners,
)

# Brokers 1 and 2 have a SASL_SSL listener, broker 3 does not.
SASL_SSL = {1: ("b1.internal", 9093), 2: ("b2.internal", 9093)}
NO_THROTTLE = timedelta(0)


def _rewrite(api_key: int, body: object) -> object:
    return endpoint_rewriter("SASL_SSL", lambda: SASL_SSL)(api_key, body)


def test_metadata_names_brokers_by_this_listener_and_leaves_out_those_without_it() -> None:
    body = MetadataResponse(
        throttle_time=NO_THROTTLE,
        brokers=tuple(
            MetadataResponseBroker(node_id=i, host=f"b{i}", port=9092, rack=None) for i in (1, 2, 3)
        ),
        cluster_id="c",
        controller_id=1,
        topics=(),
    )
    rewritten = _rewrite(3, body)
    assert isinstance(rewritten, MetadataResponse)
    assert [(b.node_id, b.host, b.port) for b in rewritten.brokers] == [
        (1, "b1.internal", 9093),
        (2, "b2.internal", 9093),
    ]
    assert rewritten.controller_id == 1 and rewritten.cluster_id == "c"


def test_describe_cluster_names_brokers_by_this_listener() -> None:
    body = DescribeClusterResponse(
        throttle_time=NO_THROTTLE,
        error_code=0,
        error_message=None,
        cluster_id="c",
        controller_id=2,
        brokers=tuple(
            DescribeClusterBroker(broker_id=i, host=f"b{i}", port=9092, rack=None) for i in (3, 2)
        ),
        cluster_authorized_operations=-(2**31),
    )
    rewritten = _rewrite(60, body)
    assert isinstance(rewritten, DescribeClusterResponse)
    assert [(b.broker_id, b.host, b.port) for b in rewritten.brokers] == [(2, "b2.internal", 9093)]


def test_find_coordinator_on_a_listener_the_coordinator_lacks_is_not_available() -> None:
    body = FindCoordinatorResponse(
        throttle_time=NO_THROTTLE,
        coordinators=(
            Coordinator(
                key="g1", node_id=1, host="b1", port=9092, error_code=0, error_message=None
            ),
            Coordinator(
                key="g3", node_id=3, host="b3", port=9092, error_code=0, error_message=None
            ),
            Coordinator(
                key="g-none",
                node_id=-1,
                host="",
                port=-1,
                error_code=15,
                error_message="no coordinator yet",
            ),
        ),
    )
    rewritten = _rewrite(10, body)
    assert isinstance(rewritten, FindCoordinatorResponse)
    g1, g3, none = rewritten.coordinators
    assert (g1.node_id, g1.host, g1.port, g1.error_code) == (1, "b1.internal", 9093, 0)
    assert (g3.node_id, g3.port, g3.error_code) == (-1, -1, 15)
    assert none == body.coordinators[2]
    old = FindCoordinatorV1(
        throttle_time=NO_THROTTLE, error_code=0, error_message=None, node_id=2, host="b2", port=1
    )
    rewritten_old = _rewrite(10, old)
    assert isinstance(rewritten_old, FindCoordinatorV1)
    assert (rewritten_old.host, rewritten_old.port) == ("b2.internal", 9093)


def test_other_responses_pass_unchanged() -> None:
    body = MetadataResponseBroker(node_id=3, host="b3", port=9092, rack=None)
    assert _rewrite(0, body) is body


def test_the_primary_listener_may_be_any_protocol_and_inter_broker_picks_a_listener() -> None:
    specs = resolve_listeners(
        ["SASL_PLAINTEXT://127.0.0.1:9094", "127.0.0.1:9092"],
        configs={"inter.broker.listener.name": "plaintext"},
    )
    assert [s.name for s in specs] == ["SASL_PLAINTEXT", "PLAINTEXT"]
    configs = {"inter.broker.listener.name": "plaintext"}
    assert inter_broker_listener(specs, configs) == ListenerSpec(
        "PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092
    )
    assert inter_broker_listener(specs, {}) == specs[0]
    with pytest.raises(ListenerError, match=r"inter.broker.listener.name=SSL is not one of"):
        inter_broker_listener(specs, {"inter.broker.listener.name": "SSL"})
