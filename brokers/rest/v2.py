"""REST Proxy v2: ``GET /kafka/brokers`` lists the live brokers' ids."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers.rest import selectors
from controlplane.content import KAFKA_V2_RENDERERS

__all__ = ["BrokerIdsView"]


class BrokerIdsSerializer(serializers.Serializer):
    brokers = serializers.ListField(child=serializers.IntegerField())


class BrokerIdsView(APIView):
    """``{"brokers": [ids]}`` of the live brokers."""

    renderer_classes = KAFKA_V2_RENDERERS

    @extend_schema(
        operation_id="listBrokersV2", responses=BrokerIdsSerializer, tags=["REST proxy v2: brokers"]
    )
    def get(self, request: Request) -> Response:
        return Response({"brokers": [b.broker_id for b in selectors.broker_list()]})
