"""``/api/`` views for topics: read a partition's records (browse and search).

Thin DRF views over :mod:`topics.messages`. Both are reads, so a viewer may call them; every
position or range is checked against the partition's offsets first, and bad input answers a
400 (404 for an unknown topic or partition) whose message names the valid range. Query
parameters are checked by serializers, so the schema documents them and the messages name
the parameter.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.errors import BadRequest
from controlplane.validation import validated
from topics import messages, selectors

MAX_OFFSET = 2**63 - 1
PARTITION = OpenApiParameter("partition", OpenApiTypes.INT, OpenApiParameter.PATH)
TAGS = ["Topics: messages"]


# query parameters ----------------------------------------------------------------------------
class MessageListQuerySerializer(serializers.Serializer):
    offset = serializers.IntegerField(
        required=False, min_value=0, max_value=MAX_OFFSET, help_text="read from this offset"
    )
    timestamp = serializers.CharField(
        required=False,
        max_length=64,
        help_text="read from this time: ISO-8601 (UTC unless zoned) or epoch milliseconds",
    )
    # ``from`` is a Python keyword, hence the declared field name below.
    order = serializers.ChoiceField(choices=("newest", "oldest"), required=False, default="newest")
    limit = serializers.IntegerField(
        required=False, min_value=1, max_value=messages.MAX_LIMIT, default=messages.DEFAULT_LIMIT
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["from"] = serializers.ChoiceField(
            choices=("end", "beginning"),
            required=False,
            help_text="without offset or timestamp: the end (default) or the beginning",
        )
        return fields


class MessageSearchQuerySerializer(serializers.Serializer):
    q = serializers.CharField(max_length=1000, help_text="substring to find (ASCII case ignored)")
    field = serializers.ChoiceField(choices=("key", "value"), required=False, default="value")
    start = serializers.IntegerField(
        required=False, min_value=0, max_value=MAX_OFFSET, help_text="first offset of this scan"
    )
    end = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_OFFSET,
        help_text="end of the range (exclusive; default the high watermark)",
    )
    chunk = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=messages.MAX_CHUNK,
        default=messages.DEFAULT_CHUNK,
        help_text="records to scan in this call",
    )


# responses -----------------------------------------------------------------------------------
class DataSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=("json", "text", "binary"))
    size = serializers.IntegerField()
    truncated = serializers.BooleanField()
    text = serializers.CharField(allow_null=True, help_text="json (pretty-printed) and text")
    hex = serializers.CharField(allow_null=True, help_text="binary")
    base64 = serializers.CharField(allow_null=True, help_text="binary")


class HeaderSerializer(serializers.Serializer):
    key = serializers.CharField()
    value = DataSerializer(allow_null=True)


class RecordSerializer(serializers.Serializer):
    offset = serializers.IntegerField()
    timestamp = serializers.IntegerField(allow_null=True, help_text="epoch milliseconds")
    timestamp_type = serializers.ChoiceField(
        choices=("CreateTime", "LogAppendTime"), allow_null=True
    )
    key = DataSerializer(allow_null=True)
    value = DataSerializer(allow_null=True)
    headers = HeaderSerializer(many=True)
    size = serializers.IntegerField()


class MessagePageSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    log_start_offset = serializers.IntegerField()
    high_watermark = serializers.IntegerField()
    start = serializers.IntegerField(help_text="first offset of the range read")
    end = serializers.IntegerField(help_text="end of the range read (exclusive)")
    order = serializers.ChoiceField(choices=("newest", "oldest"))
    records = RecordSerializer(many=True)


class SearchChunkSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    query = serializers.CharField()
    field = serializers.ChoiceField(choices=("key", "value"))
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    scanned = serializers.IntegerField(help_text="offsets covered by this call")
    next = serializers.IntegerField(allow_null=True, help_text="start of the next call")
    done = serializers.BooleanField()
    matches = RecordSerializer(many=True)


def _query(serializer: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    # Repeated parameters would be ambiguous; the last one counts, as in Django.
    params = {key: request.query_params.get(key) for key in request.query_params}
    return validated(serializer, params)


# views ---------------------------------------------------------------------------------------
class MessageListView(APIView):
    """Records of one partition from the end, the beginning, an offset or a timestamp."""

    @extend_schema(
        operation_id="topics_messages_list",
        parameters=[PARTITION, MessageListQuerySerializer],
        responses=MessagePageSerializer,
        tags=TAGS,
    )
    def get(self, request: Request, topic: str, partition: str) -> Response:
        query = _query(MessageListQuerySerializer, request)
        start = query.get("from")
        if start is not None and ("offset" in query or "timestamp" in query):
            raise BadRequest("from: give either from, offset or timestamp, not several")
        if "offset" in query and "timestamp" in query:
            raise BadRequest("give either offset or timestamp, not both")
        page = messages.message_list(
            topic=topic,
            partition=selectors.partition_number(topic_name=topic, text=partition),
            offset=query.get("offset"),
            timestamp_ms=(
                messages.parse_timestamp(query["timestamp"]) if "timestamp" in query else None
            ),
            from_beginning=start == "beginning",
            newest_first=query["order"] == "newest",
            limit=query["limit"],
        )
        return Response(page.as_dict())


class MessageSearchView(APIView):
    """One chunk of a key or value substring search over a bounded offset range."""

    @extend_schema(
        operation_id="topics_messages_search",
        parameters=[PARTITION, MessageSearchQuerySerializer],
        responses=SearchChunkSerializer,
        tags=TAGS,
    )
    def get(self, request: Request, topic: str, partition: str) -> Response:
        query = _query(MessageSearchQuerySerializer, request)
        found = messages.message_search(
            topic=topic,
            partition=selectors.partition_number(topic_name=topic, text=partition),
            query=query["q"],
            field=query["field"],
            start=query.get("start"),
            end=query.get("end"),
            chunk=query["chunk"],
        )
        return Response(found.as_dict())
