"""Weir's Django project: settings, ASGI entry point and URL routes."""
