"""URL routes of the groups app, mounted by controlplane/urls.py.

``kafka_v3`` is mounted under ``/kafka/v3/``, ``kafka_v2`` under ``/kafka/`` and ``api`` under
``/api/``.
"""

from django.urls import URLPattern, URLResolver, path

from groups import ops_api

kafka_v3: list[URLPattern | URLResolver] = []
kafka_v2: list[URLPattern | URLResolver] = []
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
