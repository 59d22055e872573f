"""URL routes of the topics app, mounted by controlplane/urls.py.

``kafka_v3`` is mounted under ``/kafka/v3/``, ``kafka_v2`` under ``/kafka/`` and ``api`` under
``/api/``. ``-`` in a v3 path means "every topic" / "every partition", as in Confluent's API.
"""

from django.urls import URLPattern, URLResolver, path

from topics import api as ops_api
from topics import rest_v2, rest_v3

_C = "clusters/<str:cluster_id>"
_T = f"{_C}/topics/<str:topic_name>"
_P = f"{_T}/partitions/<str:partition_id>"

kafka_v3: list[URLPattern | URLResolver] = [
    path(f"{_C}/topics", rest_v3.TopicListView.as_view(), name="v3-topics"),
    path(
        f"{_C}/topics/-/configs",
        rest_v3.AllTopicsConfigListView.as_view(),
        name="v3-all-topic-configs",
    ),
    path(
        f"{_C}/topics/-/partitions/-/reassignment",
        rest_v3.AllReassignmentsView.as_view(),
        name="v3-reassignments",
    ),
    path(f"{_T}", rest_v3.TopicDetailView.as_view(), name="v3-topic"),
    path(f"{_T}/configs", rest_v3.TopicConfigListView.as_view(), name="v3-topic-configs"),
    path(
        f"{_T}/configs:alter",
        rest_v3.TopicConfigsAlterView.as_view(),
        name="v3-topic-configs-alter",
    ),
    path(
        f"{_T}/configs/<str:name>",
        rest_v3.TopicConfigDetailView.as_view(),
        name="v3-topic-config",
    ),
    path(f"{_T}/records", rest_v3.ProduceRecordsView.as_view(), name="v3-produce"),
    path(f"{_T}/partitions", rest_v3.PartitionListView.as_view(), name="v3-partitions"),
    path(
        f"{_T}/partitions/-/reassignment",
        rest_v3.TopicReassignmentsView.as_view(),
        name="v3-topic-reassignments",
    ),
    path(f"{_P}", rest_v3.PartitionDetailView.as_view(), name="v3-partition"),
    path(f"{_P}/replicas", rest_v3.ReplicaListView.as_view(), name="v3-replicas"),
    path(f"{_P}/replicas/<str:broker_id>", rest_v3.ReplicaDetailView.as_view(), name="v3-replica"),
    path(
        f"{_P}/reassignment",
        rest_v3.PartitionReassignmentView.as_view(),
        name="v3-partition-reassignment",
    ),
    path(
        f"{_C}/brokers/<str:broker_id>/partition-replicas",
        rest_v3.BrokerPartitionReplicasView.as_view(),
        name="v3-broker-partition-replicas",
    ),
]
kafka_v2: list[URLPattern | URLResolver] = [
    path("topics", rest_v2.TopicNamesView.as_view(), name="v2-topics"),
    path("topics/<str:topic_name>", rest_v2.TopicView.as_view(), name="v2-topic"),
    path(
        "topics/<str:topic_name>/partitions",
        rest_v2.PartitionsView.as_view(),
        name="v2-partitions",
    ),
    path(
        "topics/<str:topic_name>/partitions/<str:partition>",
        rest_v2.PartitionView.as_view(),
        name="v2-partition",
    ),
    path(
        "topics/<str:topic_name>/partitions/<str:partition>/offsets",
        rest_v2.PartitionOffsetsView.as_view(),
        name="v2-partition-offsets",
    ),
]
_M = "topics/<str:topic>/partitions/<str:partition>/messages/"
api: list[URLPattern | URLResolver] = [
    path(_M, ops_api.MessageListView.as_view(), name="topics-messages"),
    path(f"{_M}search/", ops_api.MessageSearchView.as_view(), name="topics-messages-search"),
]
