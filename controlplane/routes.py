"""Route tables: how every app of the control plane declares its URLs.

An app's ``urls`` module lists ``(path, view class, name)`` rows, one per endpoint, under a
prefix; :func:`routes` turns them into Django URL patterns. Confluent's v3 paths all start
at a cluster, :data:`CLUSTER`, so each app writes only what follows it.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.urls import URLPattern, path
from django.views import View

__all__ = ["CLUSTER", "Route", "collection", "routes"]

# The v3 path every resource hangs from (mounted under /kafka/v3/).
CLUSTER = "clusters/<str:cluster_id>"

# (path after the prefix, view class, URL name)
Route = tuple[str, type[View], str]


def routes(prefix: str, table: Iterable[Route]) -> list[URLPattern]:
    """URL patterns for ``table``, each path appended to ``prefix``."""
    return [path(f"{prefix}{suffix}", view.as_view(), name=name) for suffix, view, name in table]


def collection(
    basename: str, list_view: type[View], detail_view: type[View], lookup: str
) -> list[Route]:
    """The two rows of a collection, named as DRF's routers name them: ``<basename>/``
    (``<basename>-list``) and ``<basename>/<lookup>/`` (``<basename>-detail``)."""
    return [
        (f"{basename}/", list_view, f"{basename}-list"),
        (f"{basename}/{lookup}/", detail_view, f"{basename}-detail"),
    ]
