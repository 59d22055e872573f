"""URL routes of the mirrors app, mounted by controlplane/urls.py (``api`` under ``/api/``).

A flow is addressed by its two aliases as path segments, ``mirrors/<source>/<target>/``: MM2
spells it ``source->target``, whose ``>`` would need escaping in every URL. The mirror has no
REST Proxy routes.
"""

from django.urls import URLPattern, URLResolver

from controlplane.routes import routes
from mirrors import api as mirror_api

_FLOW = "mirrors/<str:source>/<str:target>/"

kafka_v3: list[URLPattern | URLResolver] = []
kafka_v2: list[URLPattern | URLResolver] = []
api: list[URLPattern | URLResolver] = routes(
    "",
    [
        ("mirrors/", mirror_api.MirrorListView, "mirrors-list"),
        (_FLOW, mirror_api.MirrorDetailView, "mirrors-detail"),
        (f"{_FLOW}failover/", mirror_api.MirrorFailoverView, "mirrors-failover"),
    ],
)
