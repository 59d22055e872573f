"""``/api/`` views for jobs, their schedules and the analytics results.

Thin DRF views over :mod:`controlplane.jobs`. Reading needs the viewer role; running a job and
editing a schedule need the operator role (RolePermission's default for unsafe methods), and
like every mutating call they are audited.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane import jobs
from controlplane.errors import BadRequest, NotFound
from controlplane.models import Job
from controlplane.validation import with_body

MAX_JOBS = 1000


class JobSerializer(serializers.ModelSerializer):
    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "name",
            "status",
            "scheduled_by",
            "worker",
            "params",
            "created_at",
            "started_at",
            "finished_at",
            "progress",
            "message",
            "bytes_reclaimed",
            "rows_produced",
            "error",
            "detail",
        ]


class JobListSerializer(serializers.Serializer):
    jobs = JobSerializer(many=True)


class JobRequestSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="retention, compaction or analytics:<job>")
    topics = serializers.ListField(
        child=serializers.CharField(max_length=249), required=False, allow_empty=True
    )
    since_hours = serializers.FloatField(
        required=False, min_value=0.001, max_value=24 * 365, help_text="analytics: how far back"
    )


class ScheduleSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    job = serializers.CharField()
    task = serializers.CharField()
    interval_s = serializers.IntegerField(allow_null=True)
    enabled = serializers.BooleanField()
    last_run_at = serializers.DateTimeField(allow_null=True)
    total_run_count = serializers.IntegerField()


class ScheduleListSerializer(serializers.Serializer):
    schedules = ScheduleSerializer(many=True)


class ScheduleUpdateSerializer(serializers.Serializer):
    interval_s = serializers.IntegerField(
        required=False, min_value=1, max_value=jobs.MAX_INTERVAL_S
    )
    enabled = serializers.BooleanField(required=False)


class AnalyticsSummarySerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    job_id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    summary = serializers.JSONField()


class AnalyticsListSerializer(serializers.Serializer):
    results = AnalyticsSummarySerializer(many=True)


class AnalyticsDetailSerializer(AnalyticsSummarySerializer):
    data = serializers.JSONField()


# views ----------------------------------------------------------------------------------------


class JobListView(APIView):
    """Jobs, newest first (filter by ``kind``, ``status``, ``name``); POST runs one now."""

    @extend_schema(
        parameters=[
            OpenApiParameter("kind", OpenApiTypes.STR, enum=[k.value for k in Job.Kind]),
            OpenApiParameter("status", OpenApiTypes.STR, enum=[s.value for s in Job.Status]),
            OpenApiParameter("name", OpenApiTypes.STR),
            OpenApiParameter("limit", OpenApiTypes.INT),
        ],
        responses=JobListSerializer,
    )
    def get(self, request: Request) -> Response:
        found = Job.objects.all()
        params = request.query_params
        for field, choices in (("kind", Job.Kind.values), ("status", Job.Status.values)):
            value = params.get(field)
            if value:
                if value not in choices:
                    raise BadRequest(f"{field} must be one of {', '.join(choices)}, not {value!r}")
                found = found.filter(**{field: value})
        if params.get("name"):
            found = found.filter(name=params["name"])
        try:
            limit = int(params.get("limit", "100"))
        except ValueError:
            raise BadRequest("limit must be an integer") from None
        if not 1 <= limit <= MAX_JOBS:
            raise BadRequest(f"limit must be between 1 and {MAX_JOBS}")
        return Response({"jobs": JobSerializer(found[:limit], many=True).data})

    @with_body(JobRequestSerializer, responses={202: JobSerializer})
    def post(self, request: Request, body: dict[str, Any]) -> Response:
        params = {k: body[k] for k in ("topics", "since_hours") if body.get(k)}
        job = jobs.job_submit(
            name=body["name"], scheduled_by=f"user:{request.user.get_username()}", params=params
        )
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class JobDetailView(APIView):
    """One job, with its progress while it runs."""

    @extend_schema(responses=JobSerializer)
    def get(self, request: Request, job_id: int) -> Response:
        job = Job.objects.filter(pk=job_id).first()
        if job is None:
            raise NotFound(f"no job {job_id}")
        return Response(JobSerializer(job).data)


class ScheduleListView(APIView):
    """The job schedules beat runs."""

    @extend_schema(responses=ScheduleListSerializer)
    def get(self, request: Request) -> Response:
        return Response({"schedules": jobs.schedule_list()})


class ScheduleDetailView(APIView):
    """PATCH ``interval_s`` and/or ``enabled`` of one schedule."""

    @extend_schema(responses=ScheduleSerializer)
    def get(self, request: Request, schedule_id: int) -> Response:
        found = [s for s in jobs.schedule_list() if s["id"] == schedule_id]
        if not found:
            raise NotFound(f"no job schedule {schedule_id}")
        return Response(found[0])

    @with_body(ScheduleUpdateSerializer, responses=ScheduleSerializer)
    def patch(self, request: Request, body: dict[str, Any], schedule_id: int) -> Response:
        if not body:
            raise BadRequest("give interval_s and/or enabled")
        return Response(jobs.schedule_update(schedule_id=schedule_id, **body))


class AnalyticsListView(APIView):
    """The newest result of each analytics job (summaries only)."""

    @extend_schema(responses=AnalyticsListSerializer)
    def get(self, request: Request) -> Response:
        return Response({"results": jobs.analytics_latest()})


class AnalyticsDetailView(APIView):
    """The newest result of one analytics job, with its chart data."""

    @extend_schema(responses=AnalyticsDetailSerializer)
    def get(self, request: Request, name: str) -> Response:
        return Response(jobs.analytics_result(name=name))
