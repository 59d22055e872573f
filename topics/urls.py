"""URL routes of the topics app, mounted by controlplane/urls.py.

``kafka_v3`` is mounted under ``/kafka/v3/``, ``kafka_v2`` under ``/kafka/`` and ``api`` under
``/api/``. ``-`` in a v3 path means "every topic" / "every partition", as in Confluent's API.
"""

from django.urls import URLPattern, URLResolver

from controlplane.routes import CLUSTER, routes
from topics import api as ops_api
from topics import rest_v2, rest_v3

_T = "/topics/<str:topic_name>"
_P = f"{_T}/partitions/<str:partition_id>"

kafka_v3: list[URLPattern | URLResolver] = routes(
    CLUSTER,
    [
        ("/topics", rest_v3.TopicListView, "v3-topics"),
        ("/topics/-/configs", rest_v3.AllTopicsConfigListView, "v3-all-topic-configs"),
        (
            "/topics/-/partitions/-/reassignment",
            rest_v3.AllReassignmentsView,
            "v3-reassignments",
        ),
        (_T, rest_v3.TopicDetailView, "v3-topic"),
        (f"{_T}/configs", rest_v3.TopicConfigListView, "v3-topic-configs"),
        (f"{_T}/configs:alter", rest_v3.TopicConfigsAlterView, "v3-topic-configs-alter"),
        (f"{_T}/configs/<str:name>", rest_v3.TopicConfigDetailView, "v3-topic-config"),
        (f"{_T}/records", rest_v3.ProduceRecordsView, "v3-produce"),
        (f"{_T}/records:batch", rest_v3.ProduceBatchView, "v3-produce-batch"),
        (f"{_T}/partitions", rest_v3.PartitionListView, "v3-partitions"),
        (
            f"{_T}/partitions/-/reassignment",
            rest_v3.TopicReassignmentsView,
            "v3-topic-reassignments",
        ),
        (_P, rest_v3.PartitionDetailView, "v3-partition"),
        (f"{_P}/offset", rest_v3.PartitionOffsetsView, "v3-partition-offsets"),
        (f"{_P}/replicas", rest_v3.ReplicaListView, "v3-replicas"),
        (f"{_P}/replicas/<str:broker_id>", rest_v3.ReplicaDetailView, "v3-replica"),
        (f"{_P}/reassignment", rest_v3.PartitionReassignmentView, "v3-partition-reassignment"),
        (
            "/brokers/<str:broker_id>/partition-replicas",
            rest_v3.BrokerPartitionReplicasView,
            "v3-broker-partition-replicas",
        ),
    ],
)
_V2P = "topics/<str:topic_name>/partitions"
kafka_v2: list[URLPattern | URLResolver] = routes(
    "",
    [
        ("topics", rest_v2.TopicNamesView, "v2-topics"),
        ("topics/<str:topic_name>", rest_v2.TopicView, "v2-topic"),
        (_V2P, rest_v2.PartitionsView, "v2-partitions"),
        (f"{_V2P}/<str:partition>", rest_v2.PartitionView, "v2-partition"),
        (f"{_V2P}/<str:partition>/offsets", rest_v2.PartitionOffsetsView, "v2-partition-offsets"),
    ],
)
api: list[URLPattern | URLResolver] = routes(
    "topics/<str:topic>/partitions/<str:partition>/messages/",
    [
        ("", ops_api.MessageListView, "topics-messages"),
        ("search/", ops_api.MessageSearchView, "topics-messages-search"),
    ],
)
