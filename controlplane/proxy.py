"""Base view of the REST Proxy v2 endpoints (kept apart from ``content``, which DRF's
settings import while ``rest_framework.views`` is still loading)."""

from rest_framework.views import APIView

from controlplane.content import KAFKA_V2_PARSERS, KAFKA_V2_RENDERERS

__all__ = ["KafkaV2View"]


class KafkaV2View(APIView):
    """Confluent's v2 content types in and out."""

    renderer_classes = KAFKA_V2_RENDERERS
    parser_classes = KAFKA_V2_PARSERS
