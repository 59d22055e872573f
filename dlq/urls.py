"""URL routes of the dlq app, mounted by controlplane/urls.py (``api`` under ``/api/``)."""

from django.urls import URLPattern, URLResolver

from controlplane.routes import routes
from dlq import api as dlq_api

_TOPIC = "dlq/<str:topic>/"

kafka_v3: list[URLPattern | URLResolver] = []
kafka_v2: list[URLPattern | URLResolver] = []
api: list[URLPattern | URLResolver] = routes(
    "",
    [
        ("dlq/", dlq_api.DlqListView, "dlq-list"),
        (f"{_TOPIC}records/", dlq_api.DlqRecordListView, "dlq-records"),
        (f"{_TOPIC}replay/", dlq_api.DlqReplayView, "dlq-replay"),
        (f"{_TOPIC}purge/", dlq_api.DlqPurgeView, "dlq-purge"),
    ],
)
