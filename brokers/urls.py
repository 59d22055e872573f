"""URL routes of the brokers app, mounted by controlplane/urls.py.

``kafka_v3`` is mounted under ``/kafka/v3/``, ``kafka_v2`` under ``/kafka/`` and ``api`` under
``/api/``.
"""

from django.urls import URLPattern, URLResolver

from brokers import coordination_api, quotas_api
from brokers.ops import api as ops_api
from brokers.rest import acls, v2, v3
from controlplane.routes import CLUSTER, routes

_B = "/brokers/<str:broker_id>"

kafka_v3: list[URLPattern | URLResolver] = [
    *routes("", [("clusters", v3.ClusterListView, "v3-clusters")]),
    *routes(
        CLUSTER,
        [
            ("", v3.ClusterDetailView, "v3-cluster"),
            ("/brokers", v3.BrokerListView, "v3-brokers"),
            ("/brokers/-/configs", v3.AllBrokersConfigListView, "v3-all-broker-configs"),
            (_B, v3.BrokerDetailView, "v3-broker"),
            (f"{_B}/configs", v3.BrokerConfigListView, "v3-broker-configs"),
            (f"{_B}/configs:alter", v3.BrokerConfigsAlterView, "v3-broker-configs-alter"),
            (f"{_B}/configs/<str:name>", v3.BrokerConfigDetailView, "v3-broker-config"),
            ("/broker-configs", v3.ClusterConfigListView, "v3-cluster-configs"),
            ("/broker-configs:alter", v3.ClusterConfigsAlterView, "v3-cluster-configs-alter"),
            ("/broker-configs/<str:name>", v3.ClusterConfigDetailView, "v3-cluster-config"),
            ("/acls", acls.AclListView, "v3-acls"),
            ("/acls:batch", acls.AclBatchCreateView, "v3-acls-batch"),
        ],
    ),
]
kafka_v2: list[URLPattern | URLResolver] = routes("", [("brokers", v2.BrokerIdsView, "v2-brokers")])
api: list[URLPattern | URLResolver] = routes(
    "",
    [
        ("reassignments/", ops_api.ReassignmentsView, "reassignments"),
        ("reassignments/generate/", ops_api.ReassignmentGenerateView, "reassignments-generate"),
        ("reassignments/cancel/", ops_api.ReassignmentCancelView, "reassignments-cancel"),
        ("elections/preferred/", ops_api.PreferredElectionView, "elections-preferred"),
        ("cluster/rebalance/", ops_api.RebalanceView, "cluster-rebalance"),
        ("quotas/", quotas_api.QuotaView, "quotas"),
        ("coordination/", coordination_api.CoordinationView, "coordination"),
    ],
)
