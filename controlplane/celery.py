"""The Celery app ``controlplane``: ``celery -A controlplane worker`` and ``beat``.

Redis (``WEIR_CELERY_BROKER_URL``, by default ``WEIR_REDIS_URL``) is both the broker and the
result backend. Beat reads its schedules from the database (django-celery-beat's
``DatabaseScheduler``), so operators edit them from the API, the dashboard or Django's admin
and beat picks the change up without a restart. Tasks live in ``controlplane.tasks``; each one
runs a job and keeps its ``Job`` record (``controlplane.jobs``) up to date.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

app = Celery("controlplane")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["controlplane"])
