"""REST Proxy v3: clusters, brokers, broker configs and cluster-wide broker configs.

Thin views over :mod:`brokers.rest.selectors` and :mod:`brokers.rest.configs`. Paths, bodies
and status codes follow Confluent's v3 API: reads answer 200 with a resource or a list,
config writes answer 204. Broker ids in paths are parsed here (not by a Django converter) so
that ``/brokers/abc`` is a JSON 404 naming the id rather than an HTML page.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers.rest import selectors
from brokers.rest.configs import ConfigEntry, ConfigOp, config_describe, config_get, configs_alter
from controlplane.errors import NotFound
from controlplane.rest_v3 import (
    V3,
    RelationshipSerializer,
    V3ReadView,
    config_fields,
    parse_int,
    resource_serializer,
)
from controlplane.validation import validated
from weir.metadata.image import BrokerImage

__all__ = [
    "AllBrokersConfigListView",
    "BrokerConfigDetailView",
    "BrokerConfigListView",
    "BrokerConfigsAlterView",
    "BrokerDetailView",
    "BrokerListView",
    "ClusterConfigDetailView",
    "ClusterConfigListView",
    "ClusterConfigsAlterView",
    "ClusterDetailView",
    "ClusterListView",
    "validated",
]

BROKER_ID = OpenApiParameter("broker_id", OpenApiTypes.INT, OpenApiParameter.PATH)


# -- schemas -------------------------------------------------------------------------------
ClusterSerializer, ClusterListSerializer = resource_serializer(
    "KafkaCluster",
    {
        "controller": RelationshipSerializer(allow_null=True),
        "brokers": RelationshipSerializer(),
        "broker_configs": RelationshipSerializer(),
        "consumer_groups": RelationshipSerializer(),
        "topics": RelationshipSerializer(),
        "partition_reassignments": RelationshipSerializer(),
    },
)
BrokerSerializer, BrokerListSerializer = resource_serializer(
    "KafkaBroker",
    {
        "broker_id": serializers.IntegerField(),
        "host": serializers.CharField(),
        "port": serializers.IntegerField(),
        "rack": serializers.CharField(allow_null=True),
        "configs": RelationshipSerializer(),
        "partition_replicas": RelationshipSerializer(),
    },
)
BrokerConfigSerializer, BrokerConfigListSerializer = resource_serializer(
    "KafkaBrokerConfig", {"broker_id": serializers.IntegerField(), **config_fields()}
)
ClusterConfigSerializer, ClusterConfigListSerializer = resource_serializer(
    "KafkaClusterConfig", {"config_type": serializers.CharField(), **config_fields()}
)


class UpdateConfigSerializer(serializers.Serializer):
    value = serializers.CharField(allow_null=True, allow_blank=True)


class AlterConfigItemSerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField(allow_null=True, allow_blank=True, required=False, default=None)
    operation = serializers.ChoiceField(
        choices=["SET", "DELETE", "set", "delete"], required=False, default="SET"
    )


class AlterConfigBatchSerializer(serializers.Serializer):
    data = AlterConfigItemSerializer(many=True)
    validate_only = serializers.BooleanField(required=False, default=False)


# -- helpers shared with the topics views ---------------------------------------------------
def alter_ops(data: dict[str, Any]) -> list[ConfigOp]:
    return [
        ConfigOp(name=item["name"], operation=item["operation"].upper(), value=item["value"])
        for item in data["data"]
    ]


# -- resources -------------------------------------------------------------------------------
def cluster_resource(v3: V3) -> dict[str, Any]:
    image = selectors.cluster_image()
    controller = image.controller_id
    return v3.resource(
        "KafkaCluster",
        (),
        (),
        controller=v3.related("brokers", controller) if controller is not None else None,
        brokers=v3.related("brokers"),
        broker_configs=v3.related("broker-configs"),
        consumer_groups=v3.related("consumer-groups"),
        topics=v3.related("topics"),
        partition_reassignments=v3.related("topics", "-", "partitions", "-", "reassignment"),
    )


def broker_resource(v3: V3, broker: BrokerImage) -> dict[str, Any]:
    b = broker.broker_id
    return v3.resource(
        "KafkaBroker",
        ("brokers", b),
        (f"broker={b}",),
        broker_id=b,
        host=broker.host,
        port=broker.port,
        rack=broker.rack,
        configs=v3.related("brokers", b, "configs"),
        partition_replicas=v3.related("brokers", b, "partition-replicas"),
    )


def broker_config_resource(v3: V3, broker_id: int, entry: ConfigEntry) -> dict[str, Any]:
    return v3.resource(
        "KafkaBrokerConfig",
        ("brokers", broker_id, "configs", entry.name),
        (f"broker={broker_id}", f"config={entry.name}"),
        broker_id=broker_id,
        **entry.fields(),
    )


def cluster_config_resource(v3: V3, entry: ConfigEntry) -> dict[str, Any]:
    return v3.resource(
        "KafkaClusterConfig",
        ("broker-configs", entry.name),
        (f"broker-config={entry.name}",),
        config_type="BROKER",
        **entry.fields(),
    )


# -- clusters --------------------------------------------------------------------------------
class ClusterListView(APIView):
    """The clusters this proxy knows: exactly one, Weir's."""

    @extend_schema(
        operation_id="listKafkaClusters",
        responses=ClusterListSerializer,
        tags=["REST proxy v3: clusters"],
    )
    def get(self, request: Request) -> Response:
        v3 = V3(request, V3.id())
        body = cluster_resource(v3)
        return Response(
            {
                "kind": "KafkaClusterList",
                "metadata": {
                    "self": request.build_absolute_uri("/kafka/v3/clusters"),
                    "next": None,
                },
                "data": [body],
            }
        )


class ClusterDetailView(APIView):
    """The cluster: its controller and links to brokers, topics, groups and configs."""

    @extend_schema(
        operation_id="getKafkaCluster",
        responses=ClusterSerializer,
        tags=["REST proxy v3: clusters"],
    )
    def get(self, request: Request, cluster_id: str) -> Response:
        return Response(cluster_resource(V3(request, cluster_id)))


# -- brokers ---------------------------------------------------------------------------------
class BrokerListView(V3ReadView):
    """The live brokers."""

    read_schema = dict(
        operation_id="listKafkaBrokers",
        responses=BrokerListSerializer,
        tags=["REST proxy v3: brokers"],
    )

    def read(self, v3: V3) -> Any:
        data = [broker_resource(v3, b) for b in selectors.broker_list()]
        return v3.listing("KafkaBrokerList", ("brokers",), data)


class BrokerDetailView(V3ReadView):
    """One broker: host, port, rack."""

    read_schema = dict(
        operation_id="getKafkaBroker",
        parameters=[BROKER_ID],
        responses=BrokerSerializer,
        tags=["REST proxy v3: brokers"],
    )

    def read(self, v3: V3, broker_id: str) -> Any:
        broker = selectors.broker_get(broker_id=parse_int(broker_id, what="broker"))
        return broker_resource(v3, broker)


class BrokerConfigListView(V3ReadView):
    """Every config of one broker, with source and synonyms."""

    read_schema = dict(
        operation_id="listKafkaBrokerConfigs",
        parameters=[BROKER_ID],
        responses=BrokerConfigListSerializer,
        tags=["REST proxy v3: broker configs"],
    )

    def read(self, v3: V3, broker_id: str) -> Any:
        b = selectors.broker_get(broker_id=parse_int(broker_id, what="broker")).broker_id
        data = [
            broker_config_resource(v3, b, e) for e in config_describe(kind="broker", name=str(b))
        ]
        return v3.listing("KafkaBrokerConfigList", ("brokers", b, "configs"), data)


class AllBrokersConfigListView(V3ReadView):
    """The per-broker dynamic configs of every live broker (``brokers/-/configs``)."""

    read_schema = dict(
        operation_id="listKafkaAllBrokerConfigs",
        responses=BrokerConfigListSerializer,
        tags=["REST proxy v3: broker configs"],
    )

    def read(self, v3: V3) -> Any:
        data = []
        for broker in selectors.broker_list():
            b = broker.broker_id
            data += [
                broker_config_resource(v3, b, e)
                for e in config_describe(kind="broker", name=str(b))
                if e.source == "DYNAMIC_BROKER_CONFIG"
            ]
        return v3.listing("KafkaBrokerConfigList", ("brokers", "-", "configs"), data)


class BrokerConfigDetailView(V3ReadView):
    """Read, set (PUT ``{"value": ...}``) or reset (DELETE) one config of one broker."""

    read_schema = dict(
        operation_id="getKafkaBrokerConfig",
        parameters=[BROKER_ID],
        responses=BrokerConfigSerializer,
        tags=["REST proxy v3: broker configs"],
    )

    def read(self, v3: V3, broker_id: str, name: str) -> Any:
        b = selectors.broker_get(broker_id=parse_int(broker_id, what="broker")).broker_id
        entry = config_get(kind="broker", name=str(b), config=name)
        return broker_config_resource(v3, b, entry)

    @extend_schema(
        operation_id="updateKafkaBrokerConfig",
        parameters=[BROKER_ID],
        request=UpdateConfigSerializer,
        responses={204: None},
        tags=["REST proxy v3: broker configs"],
    )
    def put(self, request: Request, cluster_id: str, broker_id: str, name: str) -> Response:
        V3(request, cluster_id)
        b = selectors.broker_get(broker_id=parse_int(broker_id, what="broker")).broker_id
        data = validated(UpdateConfigSerializer, request.data)
        configs_alter(kind="broker", name=str(b), operations=[ConfigOp(name, "SET", data["value"])])
        return Response(status=204)

    @extend_schema(
        operation_id="resetKafkaBrokerConfig",
        parameters=[BROKER_ID],
        responses={204: None},
        tags=["REST proxy v3: broker configs"],
    )
    def delete(self, request: Request, cluster_id: str, broker_id: str, name: str) -> Response:
        V3(request, cluster_id)
        b = selectors.broker_get(broker_id=parse_int(broker_id, what="broker")).broker_id
        configs_alter(kind="broker", name=str(b), operations=[ConfigOp(name, "DELETE")])
        return Response(status=204)


class BrokerConfigsAlterView(APIView):
    """Batch alter one broker's configs: ``{"data": [{"name", "value", "operation"}]}``."""

    @extend_schema(
        operation_id="updateKafkaBrokerConfigBatch",
        parameters=[BROKER_ID],
        request=AlterConfigBatchSerializer,
        responses={204: None},
        tags=["REST proxy v3: broker configs"],
    )
    def post(self, request: Request, cluster_id: str, broker_id: str) -> Response:
        V3(request, cluster_id)
        b = selectors.broker_get(broker_id=parse_int(broker_id, what="broker")).broker_id
        data = validated(AlterConfigBatchSerializer, request.data)
        configs_alter(
            kind="broker",
            name=str(b),
            operations=alter_ops(data),
            validate_only=data["validate_only"],
        )
        return Response(status=204)


# -- cluster-wide broker configs --------------------------------------------------------------
class ClusterConfigListView(V3ReadView):
    """The cluster-wide dynamic broker configs (every broker's default)."""

    read_schema = dict(
        operation_id="listKafkaClusterConfigs",
        responses=ClusterConfigListSerializer,
        tags=["REST proxy v3: broker configs"],
    )

    def read(self, v3: V3) -> Any:
        entries = config_describe(kind="broker", name="")
        # Confluent lists only the cluster-wide dynamic configs here.
        data = [
            cluster_config_resource(v3, e)
            for e in entries
            if e.source == "DYNAMIC_DEFAULT_BROKER_CONFIG"
        ]
        return v3.listing("KafkaClusterConfigList", ("broker-configs",), data)


class ClusterConfigDetailView(V3ReadView):
    """Read, set or reset one cluster-wide broker config."""

    read_schema = dict(
        operation_id="getKafkaClusterConfig",
        responses=ClusterConfigSerializer,
        tags=["REST proxy v3: broker configs"],
    )

    def read(self, v3: V3, name: str) -> Any:
        entry = config_get(kind="broker", name="", config=name)
        if entry.source != "DYNAMIC_DEFAULT_BROKER_CONFIG":
            raise NotFound(f"config {name!r} has no cluster-wide value (it is {entry.source})")
        return cluster_config_resource(v3, entry)

    @extend_schema(
        operation_id="updateKafkaClusterConfig",
        request=UpdateConfigSerializer,
        responses={204: None},
        tags=["REST proxy v3: broker configs"],
    )
    def put(self, request: Request, cluster_id: str, name: str) -> Response:
        V3(request, cluster_id)
        data = validated(UpdateConfigSerializer, request.data)
        configs_alter(kind="broker", name="", operations=[ConfigOp(name, "SET", data["value"])])
        return Response(status=204)

    @extend_schema(
        operation_id="deleteKafkaClusterConfig",
        responses={204: None},
        tags=["REST proxy v3: broker configs"],
    )
    def delete(self, request: Request, cluster_id: str, name: str) -> Response:
        V3(request, cluster_id)
        configs_alter(kind="broker", name="", operations=[ConfigOp(name, "DELETE")])
        return Response(status=204)


class ClusterConfigsAlterView(APIView):
    """Batch alter the cluster-wide broker configs."""

    @extend_schema(
        operation_id="updateKafkaClusterConfigs",
        request=AlterConfigBatchSerializer,
        responses={204: None},
        tags=["REST proxy v3: broker configs"],
    )
    def post(self, request: Request, cluster_id: str) -> Response:
        V3(request, cluster_id)
        data = validated(AlterConfigBatchSerializer, request.data)
        configs_alter(
            kind="broker",
            name="",
            operations=alter_ops(data),
            validate_only=data["validate_only"],
        )
        return Response(status=204)
