"""URL routes of the groups app, mounted by controlplane/urls.py.

``kafka_v3`` is mounted under ``/kafka/v3/``, ``kafka_v2`` under ``/kafka/`` and ``api`` under
``/api/``.
"""

from django.urls import URLPattern, URLResolver, path

from groups import ops_api, rest_v2, rest_v3

_C = "clusters/<str:cluster_id>/consumer-groups"

kafka_v3: list[URLPattern | URLResolver] = [
    path(_C, rest_v3.ConsumerGroupListView.as_view(), name="v3-consumer-groups"),
    path(
        f"{_C}/<str:group_id>", rest_v3.ConsumerGroupDetailView.as_view(), name="v3-consumer-group"
    ),
    path(f"{_C}/<str:group_id>/consumers", rest_v3.ConsumerListView.as_view(), name="v3-consumers"),
    path(
        f"{_C}/<str:group_id>/consumers/<str:consumer_id>",
        rest_v3.ConsumerDetailView.as_view(),
        name="v3-consumer",
    ),
    path(
        f"{_C}/<str:group_id>/consumers/<str:consumer_id>/assignments",
        rest_v3.AssignmentListView.as_view(),
        name="v3-consumer-assignments",
    ),
    path(
        f"{_C}/<str:group_id>/consumers/<str:consumer_id>/assignments/<str:topic_name>"
        "/partitions/<str:partition_id>",
        rest_v3.AssignmentDetailView.as_view(),
        name="v3-consumer-assignment",
    ),
    path(f"{_C}/<str:group_id>/lags", rest_v3.LagListView.as_view(), name="v3-consumer-lags"),
    path(
        f"{_C}/<str:group_id>/lags/<str:topic_name>/partitions/<str:partition_id>",
        rest_v3.LagDetailView.as_view(),
        name="v3-consumer-lag",
    ),
    path(
        f"{_C}/<str:group_id>/lag-summary",
        rest_v3.LagSummaryView.as_view(),
        name="v3-consumer-lag-summary",
    ),
]
_I = "consumers/<str:group>/instances/<str:instance>"
kafka_v2: list[URLPattern | URLResolver] = [
    path("consumers/<str:group>", rest_v2.CreateInstanceView.as_view(), name="v2-consumer-create"),
    path(_I, rest_v2.InstanceView.as_view(), name="v2-consumer"),
    path(f"{_I}/subscription", rest_v2.SubscriptionView.as_view(), name="v2-subscription"),
    path(f"{_I}/assignments", rest_v2.AssignmentsView.as_view(), name="v2-assignments"),
    path(f"{_I}/offsets", rest_v2.OffsetsView.as_view(), name="v2-offsets"),
    path(f"{_I}/positions", rest_v2.PositionsView.as_view(), name="v2-positions"),
    path(
        f"{_I}/positions/beginning",
        rest_v2.PositionsBeginningView.as_view(),
        name="v2-positions-beginning",
    ),
    path(f"{_I}/positions/end", rest_v2.PositionsEndView.as_view(), name="v2-positions-end"),
    path(f"{_I}/records", rest_v2.RecordsView.as_view(), name="v2-records"),
]
api: list[URLPattern | URLResolver] = [
    path("groups/", ops_api.GroupListView.as_view(), name="groups-list"),
    path("groups/<str:group>/lag/", ops_api.GroupLagView.as_view(), name="groups-lag"),
    path(
        "groups/<str:group>/lag/history/",
        ops_api.GroupLagHistoryView.as_view(),
        name="groups-lag-history",
    ),
    path(
        "groups/<str:group>/status/history/",
        ops_api.GroupStatusHistoryView.as_view(),
        name="groups-status-history",
    ),
    path(
        "groups/<str:group>/rebalance/",
        ops_api.GroupRebalanceView.as_view(),
        name="groups-rebalance",
    ),
    path(
        "groups/<str:group>/reset-offsets/",
        ops_api.GroupResetOffsetsView.as_view(),
        name="groups-reset-offsets",
    ),
    path("webhooks/", ops_api.WebhookListView.as_view(), name="webhooks-list"),
    path(
        "webhooks/<int:webhook_id>/",
        ops_api.WebhookDetailView.as_view(),
        name="webhooks-detail",
    ),
]
