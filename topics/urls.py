"""URL routes of the topics app, mounted by controlplane/urls.py.

``kafka_v3`` is mounted under ``/kafka/v3/``, ``kafka_v2`` under ``/kafka/`` and ``api`` under
``/api/``.
"""

from django.urls import URLPattern, URLResolver

kafka_v3: list[URLPattern | URLResolver] = []
kafka_v2: list[URLPattern | URLResolver] = []
api: list[URLPattern | URLResolver] = []
