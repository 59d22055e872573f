"""Weir's Django project: settings, ASGI entry point, URL routes and the Celery app."""

from controlplane.celery import app as celery_app

__all__ = ["celery_app"]
