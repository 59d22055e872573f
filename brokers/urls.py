"""URL routes of the brokers app, mounted by controlplane/urls.py.

``kafka_v3`` is mounted under ``/kafka/v3/``, ``kafka_v2`` under ``/kafka/`` and ``api`` under
``/api/``.
"""

from django.urls import URLPattern, URLResolver, path

from brokers.ops import api as ops_api
from brokers.rest import acls, v2, v3

_C = "clusters/<str:cluster_id>"

kafka_v3: list[URLPattern | URLResolver] = [
    path("clusters", v3.ClusterListView.as_view(), name="v3-clusters"),
    path(f"{_C}", v3.ClusterDetailView.as_view(), name="v3-cluster"),
    path(f"{_C}/brokers", v3.BrokerListView.as_view(), name="v3-brokers"),
    path(
        f"{_C}/brokers/-/configs",
        v3.AllBrokersConfigListView.as_view(),
        name="v3-all-broker-configs",
    ),
    path(f"{_C}/brokers/<str:broker_id>", v3.BrokerDetailView.as_view(), name="v3-broker"),
    path(
        f"{_C}/brokers/<str:broker_id>/configs",
        v3.BrokerConfigListView.as_view(),
        name="v3-broker-configs",
    ),
    path(
        f"{_C}/brokers/<str:broker_id>/configs:alter",
        v3.BrokerConfigsAlterView.as_view(),
        name="v3-broker-configs-alter",
    ),
    path(
        f"{_C}/brokers/<str:broker_id>/configs/<str:name>",
        v3.BrokerConfigDetailView.as_view(),
        name="v3-broker-config",
    ),
    path(f"{_C}/broker-configs", v3.ClusterConfigListView.as_view(), name="v3-cluster-configs"),
    path(
        f"{_C}/broker-configs:alter",
        v3.ClusterConfigsAlterView.as_view(),
        name="v3-cluster-configs-alter",
    ),
    path(
        f"{_C}/broker-configs/<str:name>",
        v3.ClusterConfigDetailView.as_view(),
        name="v3-cluster-config",
    ),
    path(f"{_C}/acls", acls.AclListView.as_view(), name="v3-acls"),
    path(f"{_C}/acls:batch", acls.AclBatchCreateView.as_view(), name="v3-acls-batch"),
]
kafka_v2: list[URLPattern | URLResolver] = [
    path("brokers", v2.BrokerIdsView.as_view(), name="v2-brokers"),
]
api: list[URLPattern | URLResolver] = [
    path("reassignments/", ops_api.ReassignmentsView.as_view(), name="reassignments"),
    path(
        "reassignments/generate/",
        ops_api.ReassignmentGenerateView.as_view(),
        name="reassignments-generate",
    ),
    path(
        "reassignments/cancel/",
        ops_api.ReassignmentCancelView.as_view(),
        name="reassignments-cancel",
    ),
    path(
        "elections/preferred/",
        ops_api.PreferredElectionView.as_view(),
        name="elections-preferred",
    ),
    path("cluster/rebalance/", ops_api.RebalanceView.as_view(), name="cluster-rebalance"),
]
