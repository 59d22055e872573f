"""URL routes of the groups app, mounted by controlplane/urls.py.

``kafka_v3`` is mounted under ``/kafka/v3/``, ``kafka_v2`` under ``/kafka/`` and ``api`` under
``/api/``.
"""

from django.urls import URLPattern, URLResolver

from controlplane.routes import CLUSTER, collection, routes
from groups import ops_api, rest_v2, rest_v3

_G = "/<str:group_id>"
_M = f"{_G}/consumers/<str:consumer_id>"
_TP = "/<str:topic_name>/partitions/<str:partition_id>"

kafka_v3: list[URLPattern | URLResolver] = routes(
    f"{CLUSTER}/consumer-groups",
    [
        ("", rest_v3.ConsumerGroupListView, "v3-consumer-groups"),
        (_G, rest_v3.ConsumerGroupDetailView, "v3-consumer-group"),
        (f"{_G}/consumers", rest_v3.ConsumerListView, "v3-consumers"),
        (_M, rest_v3.ConsumerDetailView, "v3-consumer"),
        (f"{_M}/assignments", rest_v3.AssignmentListView, "v3-consumer-assignments"),
        (f"{_M}/assignments{_TP}", rest_v3.AssignmentDetailView, "v3-consumer-assignment"),
        (f"{_G}/lags", rest_v3.LagListView, "v3-consumer-lags"),
        (f"{_G}/lags{_TP}", rest_v3.LagDetailView, "v3-consumer-lag"),
        (f"{_G}/lag-summary", rest_v3.LagSummaryView, "v3-consumer-lag-summary"),
    ],
)
_I = "consumers/<str:group>/instances/<str:instance>"
kafka_v2: list[URLPattern | URLResolver] = routes(
    "",
    [
        ("consumers/<str:group>", rest_v2.CreateInstanceView, "v2-consumer-create"),
        (_I, rest_v2.InstanceView, "v2-consumer"),
        (f"{_I}/subscription", rest_v2.SubscriptionView, "v2-subscription"),
        (f"{_I}/assignments", rest_v2.AssignmentsView, "v2-assignments"),
        (f"{_I}/offsets", rest_v2.OffsetsView, "v2-offsets"),
        (f"{_I}/positions", rest_v2.PositionsView, "v2-positions"),
        (f"{_I}/positions/beginning", rest_v2.PositionsBeginningView, "v2-positions-beginning"),
        (f"{_I}/positions/end", rest_v2.PositionsEndView, "v2-positions-end"),
        (f"{_I}/records", rest_v2.RecordsView, "v2-records"),
    ],
)
api: list[URLPattern | URLResolver] = routes(
    "",
    [
        ("groups/", ops_api.GroupListView, "groups-list"),
        ("groups/<str:group>/lag/", ops_api.GroupLagView, "groups-lag"),
        ("groups/<str:group>/lag/history/", ops_api.GroupLagHistoryView, "groups-lag-history"),
        (
            "groups/<str:group>/status/history/",
            ops_api.GroupStatusHistoryView,
            "groups-status-history",
        ),
        ("groups/<str:group>/rebalance/", ops_api.GroupRebalanceView, "groups-rebalance"),
        (
            "groups/<str:group>/reset-offsets/",
            ops_api.GroupResetOffsetsView,
            "groups-reset-offsets",
        ),
        *collection(
            "webhooks", ops_api.WebhookListView, ops_api.WebhookDetailView, "<int:webhook_id>"
        ),
    ],
)
