"""URL routes of the control plane.

``/kafka/v3/...`` and ``/kafka/...`` (v2) are the Confluent-compatible REST proxy, ``/api/`` is
Weir's operations API (schema at ``/api/schema/``, docs at ``/api/docs/``), ``/metrics`` is
Prometheus text. ``/schema-registry/`` is Confluent Schema Registry's API
(:mod:`schemaregistry`). Each app contributes its routes through the lists in its ``urls`` module.
"""

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny

from brokers import urls as broker_urls
from controlplane import api, jobs_api, scram_users_api
from controlplane.metrics import MetricsView
from controlplane.routes import collection, routes
from dlq import urls as dlq_urls
from groups import urls as group_urls
from mirrors import urls as mirror_urls
from topics import urls as topic_urls

_apps = (broker_urls, topic_urls, group_urls, mirror_urls, dlq_urls)

api_urlpatterns = [
    *routes(
        "",
        [
            ("me/", api.MeView, "me"),
            *collection("users", api.UserListView, api.UserDetailView, "<str:username>"),
            ("token/", api.TokenView, "token-rotate"),
            ("audit/", api.AuditListView, "audit-list"),
            *collection(
                "scram-users",
                scram_users_api.ScramUserListView,
                scram_users_api.ScramUserDetailView,
                "<str:name>",
            ),
            *collection("jobs", jobs_api.JobListView, jobs_api.JobDetailView, "<int:job_id>"),
            *collection(
                "schedules",
                jobs_api.ScheduleListView,
                jobs_api.ScheduleDetailView,
                "<int:schedule_id>",
            ),
            *collection(
                "analytics", jobs_api.AnalyticsListView, jobs_api.AnalyticsDetailView, "<str:name>"
            ),
        ],
    ),
    path("schema/", SpectacularAPIView.as_view(permission_classes=[AllowAny]), name="schema"),
    path(
        "docs/",
        SpectacularSwaggerView.as_view(url_name="schema", permission_classes=[AllowAny]),
        name="api-docs",
    ),
]
for _app in _apps:
    api_urlpatterns += _app.api

kafka_v3_urlpatterns = [p for _app in _apps for p in _app.kafka_v3]
kafka_v2_urlpatterns = [p for _app in _apps for p in _app.kafka_v2]


@csrf_exempt  # it changes nothing; a cookie-carrying DELETE must still get the JSON 404
def api_not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Unknown paths under /api/ and /kafka/ answer in the API's error shape, not HTML."""
    message = f"no such endpoint: {request.method} {request.path}"
    return JsonResponse({"error_code": 404, "message": message}, status=404)


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include(api_urlpatterns)),
    path("kafka/v3/", include(kafka_v3_urlpatterns)),
    path("kafka/", include(kafka_v2_urlpatterns)),
    path("schema-registry/", include("schemaregistry.urls")),
    re_path(r"^(?P<rest>(api|kafka)/.*)$", api_not_found, name="api-not-found"),
    path("metrics", MetricsView.as_view(), name="metrics"),
    path("", include("frontend.urls")),
]
