"""REST Proxy v3: clusters, brokers, broker configs and cluster-wide broker configs.

Thin views over :mod:`brokers.rest.selectors` and :mod:`brokers.rest.configs`. Paths, bodies
and status codes follow Confluent's v3 API: reads answer 200 with a resource or a list,
config writes answer 204. Broker ids in paths are parsed here (not by a Django converter) so
that ``/brokers/abc`` is a JSON 404 naming the id rather than an HTML page.
"""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers.rest import selectors
from brokers.rest.configs import (
    ConfigEntry,
    ConfigOp,
    Kind,
    config_describe,
    config_get,
    configs_alter,
)
from controlplane.errors import NotFound
from controlplane.rest_v3 import (
    V3,
    RelationshipSerializer,
    V3ReadView,
    config_fields,
    parse_int,
    resource_serializer,
    v3_get,
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
    "config_resource",
    "config_resources",
    "config_serializers",
    "validated",
]

TAG_CONFIGS = ["REST proxy v3: broker configs"]
BROKER_ID = OpenApiParameter("broker_id", OpenApiTypes.INT, OpenApiParameter.PATH)

# The field naming the owner of a config in its resource (``KafkaTopicConfig.topic_name``).
_CONFIG_OWNER_FIELD: dict[Kind, str] = {"topic": "topic_name", "broker": "broker_id"}


def config_serializers(
    kind: Kind,
) -> tuple[type[serializers.Serializer], type[serializers.Serializer]]:
    """The schema of :func:`config_resource`'s resources of ``kind``, and of their list."""
    owner = serializers.CharField() if kind == "topic" else serializers.IntegerField()
    fields = {_CONFIG_OWNER_FIELD[kind]: owner, **config_fields()}
    return resource_serializer(f"Kafka{kind.title()}Config", fields)


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
BrokerConfigSerializer, BrokerConfigListSerializer = config_serializers("broker")
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


# -- config writes, shared by topic, broker and cluster-wide broker configs -----------------
class ConfigWriteView(V3ReadView):
    """The writes of one config resource, the same for topic, broker and cluster-wide broker
    configs: PUT ``{"value"}`` sets one config, DELETE resets it to its default, POST alters a
    batch ``{"data": [...], "validate_only"}`` atomically; each answers 204.

    A subclass names its resource (``target(**path)`` → resource name, raising 404 for an
    unknown one; ``""`` is the cluster-wide broker default) and gives the OpenAPI
    ``operation_id``/``parameters`` of the methods it offers: ``put_schema`` and
    ``delete_schema`` (a detail view), ``batch_schema`` (a batch view). Topics override
    ``alter`` and ``before_reset`` to go through :mod:`topics.services`.
    """

    config_kind: ClassVar[Kind] = "broker"
    config_tags: ClassVar[list[str]] = TAG_CONFIGS
    put_schema: ClassVar[dict[str, Any]] = {}
    delete_schema: ClassVar[dict[str, Any]] = {}
    batch_schema: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A function per class, as in V3ReadView: extend_schema records on the function.
        tags = cls.config_tags
        if "put_schema" in cls.__dict__:

            def put(self: ConfigWriteView, request: Request, cluster_id: str, **path: str) -> Any:
                V3(request, cluster_id)
                name = path.pop("name")
                resource = self.target(**path)
                data = validated(UpdateConfigSerializer, request.data)
                self.alter(resource, [ConfigOp(name, "SET", data["value"])])
                return Response(status=204)

            cls.put = extend_schema(  # type: ignore[attr-defined]
                request=UpdateConfigSerializer, responses={204: None}, tags=tags, **cls.put_schema
            )(put)
        if "delete_schema" in cls.__dict__:

            def delete(
                self: ConfigWriteView, request: Request, cluster_id: str, **path: str
            ) -> Any:
                V3(request, cluster_id)
                name = path.pop("name")
                resource = self.target(**path)
                self.before_reset(resource, name)
                self.alter(resource, [ConfigOp(name, "DELETE")])
                return Response(status=204)

            cls.delete = extend_schema(  # type: ignore[attr-defined]
                responses={204: None}, tags=tags, **cls.delete_schema
            )(delete)
        if "batch_schema" in cls.__dict__:

            def post(self: ConfigWriteView, request: Request, cluster_id: str, **path: str) -> Any:
                V3(request, cluster_id)
                resource = self.target(**path)
                data = validated(AlterConfigBatchSerializer, request.data)
                self.alter(resource, alter_ops(data), validate_only=data["validate_only"])
                return Response(status=204)

            cls.post = extend_schema(  # type: ignore[attr-defined]
                request=AlterConfigBatchSerializer,
                responses={204: None},
                tags=tags,
                **cls.batch_schema,
            )(post)

    def target(self, **path: str) -> str:
        """The resource's name from the URL's path (the cluster-wide default: "")."""
        return ""

    def before_reset(self, resource: str, name: str) -> None:
        """Checks before a DELETE (none for broker configs)."""

    def alter(self, resource: str, operations: list[ConfigOp], validate_only: bool = False) -> None:
        configs_alter(
            kind=self.config_kind,
            name=resource,
            operations=operations,
            validate_only=validate_only,
        )


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


def config_resource(v3: V3, kind: Kind, owner: str | int, entry: ConfigEntry) -> dict[str, Any]:
    """One config of a topic (``KafkaTopicConfig`` under ``/topics/<name>/configs/``) or of a
    broker (``KafkaBrokerConfig`` under ``/brokers/<id>/configs/``), as a v3 resource."""
    return v3.resource(
        f"Kafka{kind.title()}Config",
        (f"{kind}s", owner, "configs", entry.name),
        (f"{kind}={owner}", f"config={entry.name}"),
        **{_CONFIG_OWNER_FIELD[kind]: owner},
        **entry.fields(),
    )


def config_resources(v3: V3, kind: Kind, owner: str | int) -> list[dict[str, Any]]:
    """Every config of one topic (404 if the topic is gone) or broker, as v3 resources."""
    entries = config_describe(kind=kind, name=str(owner))
    return [config_resource(v3, kind, owner, e) for e in entries]


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

    read_schema = v3_get("listKafkaBrokers", BrokerListSerializer, ["REST proxy v3: brokers"])

    def read(self, v3: V3) -> Any:
        data = [broker_resource(v3, b) for b in selectors.broker_list()]
        return v3.listing("KafkaBrokerList", ("brokers",), data)


class BrokerDetailView(V3ReadView):
    """One broker: host, port, rack."""

    read_schema = v3_get("getKafkaBroker", BrokerSerializer, ["REST proxy v3: brokers"], BROKER_ID)

    def read(self, v3: V3, broker_id: str) -> Any:
        broker = selectors.broker_get(broker_id=parse_int(broker_id, what="broker"))
        return broker_resource(v3, broker)


class BrokerConfigListView(V3ReadView):
    """Every config of one broker, with source and synonyms."""

    read_schema = v3_get(
        "listKafkaBrokerConfigs",
        BrokerConfigListSerializer,
        TAG_CONFIGS,
        BROKER_ID,
    )

    def read(self, v3: V3, broker_id: str) -> Any:
        b = selectors.broker_get(broker_id=parse_int(broker_id, what="broker")).broker_id
        data = config_resources(v3, "broker", b)
        return v3.listing("KafkaBrokerConfigList", ("brokers", b, "configs"), data)


class AllBrokersConfigListView(V3ReadView):
    """The per-broker dynamic configs of every live broker (``brokers/-/configs``)."""

    read_schema = v3_get("listKafkaAllBrokerConfigs", BrokerConfigListSerializer, TAG_CONFIGS)

    def read(self, v3: V3) -> Any:
        data = [
            config
            for broker in selectors.broker_list()
            for config in config_resources(v3, "broker", broker.broker_id)
            if config["source"] == "DYNAMIC_BROKER_CONFIG"
        ]
        return v3.listing("KafkaBrokerConfigList", ("brokers", "-", "configs"), data)


class BrokerConfigDetailView(ConfigWriteView):
    """Read, set (PUT ``{"value": ...}``) or reset (DELETE) one config of one broker."""

    read_schema = v3_get("getKafkaBrokerConfig", BrokerConfigSerializer, TAG_CONFIGS, BROKER_ID)
    put_schema = dict(operation_id="updateKafkaBrokerConfig", parameters=[BROKER_ID])
    delete_schema = dict(operation_id="resetKafkaBrokerConfig", parameters=[BROKER_ID])

    def read(self, v3: V3, broker_id: str, name: str) -> Any:
        b = selectors.broker_get(broker_id=parse_int(broker_id, what="broker")).broker_id
        entry = config_get(kind="broker", name=str(b), config=name)
        return config_resource(v3, "broker", b, entry)

    def target(self, *, broker_id: str) -> str:
        return str(selectors.broker_get(broker_id=parse_int(broker_id, what="broker")).broker_id)


class BrokerConfigsAlterView(ConfigWriteView):
    """Batch alter one broker's configs: ``{"data": [{"name", "value", "operation"}]}``."""

    batch_schema = dict(operation_id="updateKafkaBrokerConfigBatch", parameters=[BROKER_ID])
    target = BrokerConfigDetailView.target


# -- cluster-wide broker configs --------------------------------------------------------------
class ClusterConfigListView(V3ReadView):
    """The cluster-wide dynamic broker configs (every broker's default)."""

    read_schema = v3_get("listKafkaClusterConfigs", ClusterConfigListSerializer, TAG_CONFIGS)

    def read(self, v3: V3) -> Any:
        entries = config_describe(kind="broker", name="")
        # Confluent lists only the cluster-wide dynamic configs here.
        data = [
            cluster_config_resource(v3, e)
            for e in entries
            if e.source == "DYNAMIC_DEFAULT_BROKER_CONFIG"
        ]
        return v3.listing("KafkaClusterConfigList", ("broker-configs",), data)


class ClusterConfigDetailView(ConfigWriteView):
    """Read, set or reset one cluster-wide broker config."""

    read_schema = v3_get("getKafkaClusterConfig", ClusterConfigSerializer, TAG_CONFIGS)

    def read(self, v3: V3, name: str) -> Any:
        entry = config_get(kind="broker", name="", config=name)
        if entry.source != "DYNAMIC_DEFAULT_BROKER_CONFIG":
            raise NotFound(f"config {name!r} has no cluster-wide value (it is {entry.source})")
        return cluster_config_resource(v3, entry)

    put_schema = dict(operation_id="updateKafkaClusterConfig")
    delete_schema = dict(operation_id="deleteKafkaClusterConfig")


class ClusterConfigsAlterView(ConfigWriteView):
    """Batch alter the cluster-wide broker configs."""

    batch_schema = dict(operation_id="updateKafkaClusterConfigs")
