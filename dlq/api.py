"""``/api/dlq/`` views: dead letter queues, their records with error context, replay, purge.

Thin DRF views over :mod:`dlq.selectors` and :mod:`dlq.replay`. Reading needs the viewer role;
replaying and purging need the operator role (RolePermission's default for unsafe methods)
and, like every mutating call, are audited. A replay that is not a dry run is a job: the
answer is 202 with the job, whose progress ``GET /api/jobs/<id>/`` reports.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane import jobs
from controlplane.errors import BadRequest
from controlplane.jobs_api import JobSerializer
from controlplane.models import Job
from controlplane.validation import validated, with_body
from dlq import replay, selectors
from topics.api import MAX_OFFSET, RecordSerializer

TAGS = ["Dead letter queues"]


# lists and records ---------------------------------------------------------------------------
class DlqTopicSerializer(serializers.Serializer):
    name = serializers.CharField()
    partitions = serializers.IntegerField()
    records = serializers.IntegerField(help_text="records between log start and high watermark")
    detected_by = serializers.ChoiceField(choices=("pattern", "headers"))


class DlqListSerializer(serializers.Serializer):
    pattern = serializers.CharField(help_text="WEIR_DLQ_TOPIC_PATTERN")
    topics = DlqTopicSerializer(many=True)


class ErrorContextSerializer(serializers.Serializer):
    convention = serializers.ChoiceField(choices=("connect", "spring"), allow_null=True)
    original_topic = serializers.CharField(allow_null=True)
    original_partition = serializers.IntegerField(allow_null=True)
    original_offset = serializers.IntegerField(allow_null=True)
    exception_class = serializers.CharField(allow_null=True)
    exception_message = serializers.CharField(allow_null=True)
    stacktrace = serializers.CharField(allow_null=True)
    connector = serializers.CharField(allow_null=True)
    task = serializers.CharField(allow_null=True)
    stage = serializers.CharField(allow_null=True)
    consumer_group = serializers.CharField(allow_null=True)
    attempts = serializers.IntegerField(allow_null=True)


class DeadLetterSerializer(RecordSerializer):
    error = ErrorContextSerializer()


class RecordPageSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    partitions = serializers.IntegerField(help_text="the topic's partition count")
    log_start_offset = serializers.IntegerField()
    high_watermark = serializers.IntegerField()
    start = serializers.IntegerField()
    next = serializers.IntegerField(allow_null=True, help_text="start of the next page")
    scanned = serializers.IntegerField(help_text="records read for this page")
    records = DeadLetterSerializer(many=True)


class RecordQuerySerializer(serializers.Serializer):
    partition = serializers.IntegerField(required=False, default=0, min_value=0)
    start = serializers.IntegerField(
        required=False, min_value=0, max_value=MAX_OFFSET, help_text="default: the log start"
    )
    limit = serializers.IntegerField(
        required=False, min_value=1, max_value=selectors.MAX_LIMIT, default=selectors.DEFAULT_LIMIT
    )
    original_topic = serializers.CharField(required=False, max_length=249, allow_blank=True)
    exception = serializers.CharField(
        required=False, max_length=1000, allow_blank=True, help_text="in the class or message"
    )
    q = serializers.CharField(
        required=False, max_length=1000, allow_blank=True, help_text="in the key or value"
    )


# replay and purge ----------------------------------------------------------------------------
class OffsetSerializer(serializers.Serializer):
    partition = serializers.IntegerField(min_value=0)
    offset = serializers.IntegerField(min_value=0, max_value=MAX_OFFSET)


class RangeSerializer(serializers.Serializer):
    partition = serializers.IntegerField(min_value=0)
    start_offset = serializers.IntegerField(min_value=0, max_value=MAX_OFFSET)
    end_offset = serializers.IntegerField(min_value=0, max_value=MAX_OFFSET, help_text="exclusive")


class ReplayRequestSerializer(serializers.Serializer):
    records = OffsetSerializer(many=True, required=False, max_length=replay.MAX_SELECTED)
    ranges = RangeSerializer(many=True, required=False)
    all = serializers.BooleanField(
        required=False, default=False, help_text="every record the DLQ holds now"
    )
    original_topic = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, max_length=249
    )
    exception = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, max_length=1000
    )
    q = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=1000,
        help_text="text in the key or value (ranges and all)",
    )
    target_topic = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=249,
        help_text="default: each record's original topic",
    )
    dry_run = serializers.BooleanField(required=False, default=False)
    purge = serializers.BooleanField(
        required=False, default=False, help_text="after a complete replay, delete what it read"
    )


class TargetSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField(allow_null=True, help_text="null: by key")
    records = serializers.IntegerField()


class SampleSerializer(serializers.Serializer):
    partition = serializers.IntegerField()
    offset = serializers.IntegerField()
    target_topic = serializers.CharField()
    target_partition = serializers.IntegerField(allow_null=True)


class PurgePointSerializer(serializers.Serializer):
    partition = serializers.IntegerField(min_value=0)
    before_offset = serializers.IntegerField(min_value=0, max_value=MAX_OFFSET)


class ReplayAnswerSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    scanned = serializers.IntegerField(required=False)
    matched = serializers.IntegerField(required=False)
    skipped = serializers.IntegerField(required=False)
    targets = TargetSerializer(many=True, required=False)
    sample = SampleSerializer(many=True, required=False)
    problems = serializers.ListField(child=serializers.CharField(), required=False)
    purge = PurgePointSerializer(many=True, allow_null=True, required=False)
    job = JobSerializer(required=False, help_text="the replay job (not a dry run)")


class PurgeRequestSerializer(serializers.Serializer):
    partitions = PurgePointSerializer(many=True, min_length=1)


class PurgedSerializer(serializers.Serializer):
    partition = serializers.IntegerField()
    low_watermark = serializers.IntegerField(help_text="the partition's new log start offset")


class PurgeAnswerSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partitions = PurgedSerializer(many=True)


# views ---------------------------------------------------------------------------------------
class DlqListView(APIView):
    """The dead letter queues: topics named by WEIR_DLQ_TOPIC_PATTERN or carrying Kafka
    Connect's or Spring's dead-letter headers."""

    @extend_schema(operation_id="dlq_list", responses=DlqListSerializer, tags=TAGS)
    def get(self, request: Request) -> Response:
        found = selectors.dlq_list()
        return Response(
            {
                "pattern": selectors.topic_pattern().pattern,
                "topics": [t.as_dict() for t in found],
            }
        )


class DlqRecordListView(APIView):
    """One page of a DLQ partition's records with their error context, filtered."""

    @extend_schema(
        operation_id="dlq_records",
        parameters=[RecordQuerySerializer],
        responses=RecordPageSerializer,
        tags=TAGS,
    )
    def get(self, request: Request, topic: str) -> Response:
        params = {key: request.query_params.get(key) for key in request.query_params}
        query = validated(RecordQuerySerializer, params)
        page = selectors.record_list(
            topic=topic,
            partition=query["partition"],
            start=query.get("start"),
            limit=query["limit"],
            where=selectors.RecordFilter(
                original_topic=query.get("original_topic") or None,
                exception=query.get("exception") or None,
                text=query.get("q") or None,
            ),
        )
        return Response(page.as_dict())


class DlqReplayView(APIView):
    """Replay records (picked, ranges or all) to their original topic or ``target_topic``:
    ``dry_run`` answers the plan; otherwise 202 with the replay job."""

    @with_body(
        ReplayRequestSerializer,
        operation_id="dlq_replay",
        responses={200: ReplayAnswerSerializer, 202: ReplayAnswerSerializer},
        tags=TAGS,
    )
    def post(self, request: Request, body: dict[str, Any], topic: str) -> Response:
        asked = replay.ReplayRequest.resolve(
            topic=topic,
            records=body.get("records"),
            ranges=body.get("ranges"),
            everything=body["all"],
            original_topic=body.get("original_topic") or None,
            exception=body.get("exception") or None,
            text=body.get("q") or None,
            target_topic=body.get("target_topic") or None,
            purge=body["purge"],
        )
        if body["dry_run"]:
            return Response({"dry_run": True, **replay.plan(asked).as_dict()})
        job = jobs.job_submit(
            name=f"dlq-replay:{topic}"[:100],
            kind=Job.Kind.DLQ_REPLAY,
            scheduled_by=f"user:{request.user.get_username()}",
            params=asked.to_params(),
        )
        return Response(
            {"dry_run": False, "job": JobSerializer(job).data}, status=status.HTTP_202_ACCEPTED
        )


class DlqPurgeView(APIView):
    """Delete a DLQ partition's records before an offset (Kafka's DeleteRecords)."""

    @with_body(
        PurgeRequestSerializer,
        operation_id="dlq_purge",
        responses=PurgeAnswerSerializer,
        tags=TAGS,
    )
    def post(self, request: Request, body: dict[str, Any], topic: str) -> Response:
        before: dict[int, int] = {}
        for item in body["partitions"]:
            if item["partition"] in before:
                raise BadRequest(f"partition {item['partition']} is given twice")
            before[item["partition"]] = item["before_offset"]
        return Response({"topic": topic, "partitions": replay.purge(topic=topic, before=before)})
