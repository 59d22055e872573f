"""URL routes of the schema registry, mounted at ``/schema-registry/`` by controlplane/urls.py.

Confluent's paths, with and without the trailing slash its clients leave off
(``schema.registry.url`` + ``/subjects/orders-value/versions``). Unknown paths answer
Confluent's 404 body.

A subject may hold slashes: confluent-kafka's ProtobufSerializer registers each import under
its path (``shop/address.proto``), URL-encoded as ``shop%2Faddress.proto``, and the server
(wsgiref, daphne) hands Django the decoded path. So a subject matches any text, lazily (a
trailing slash stays the route's), and each subject route comes before the shorter routes
that would swallow its suffix (``subjects/{s}`` last of its family).
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import URLPattern, re_path
from django.views.decorators.csrf import csrf_exempt

from schemaregistry import api

_SUBJECT = r"(?P<subject>.+?)"  # slashes too, see the docstring
_VERSION = r"(?P<version>[^/]+)"
_ID = r"(?P<schema_id>[0-9]{1,10})"  # views take int(schema_id)

# (regular expression after /schema-registry/, view, URL name); each matches with or
# without a trailing slash.
_TABLE: list[tuple[str, type, str]] = [
    (r"", api.RootView, "registry-root"),
    (r"schemas/types", api.SchemaTypesView, "registry-schema-types"),
    (rf"schemas/ids/{_ID}", api.SchemaByIdView, "registry-schema"),
    (rf"schemas/ids/{_ID}/schema", api.SchemaRawByIdView, "registry-schema-raw"),
    (rf"schemas/ids/{_ID}/subjects", api.SchemaSubjectsByIdView, "registry-schema-subjects"),
    (rf"schemas/ids/{_ID}/versions", api.SchemaVersionsByIdView, "registry-schema-versions"),
    (r"subjects", api.SubjectListView, "registry-subjects"),
    (
        rf"subjects/{_SUBJECT}/versions/{_VERSION}/schema",
        api.SubjectVersionSchemaView,
        "registry-version-schema",
    ),
    (
        rf"subjects/{_SUBJECT}/versions/{_VERSION}/referencedby",
        api.ReferencedByView,
        "registry-referencedby",
    ),
    (rf"subjects/{_SUBJECT}/versions/{_VERSION}", api.SubjectVersionView, "registry-version"),
    (rf"subjects/{_SUBJECT}/versions", api.SubjectVersionListView, "registry-versions"),
    (rf"subjects/{_SUBJECT}", api.SubjectView, "registry-subject"),
    (
        rf"compatibility/subjects/{_SUBJECT}/versions/{_VERSION}",
        api.CompatibilityView,
        "registry-compat",
    ),
    (rf"compatibility/subjects/{_SUBJECT}/versions", api.CompatibilityView, "registry-compat-all"),
    (
        r"associations/resources/(?P<namespace>[^/]+)/(?P<name>.+?)",
        api.AssociationsView,
        "registry-associations",
    ),
    (r"contexts", api.ContextsView, "registry-contexts"),
    (r"config", api.ConfigView, "registry-config"),
    (rf"config/{_SUBJECT}", api.ConfigView, "registry-subject-config"),
    (r"mode", api.ModeView, "registry-mode"),
    (rf"mode/{_SUBJECT}", api.ModeView, "registry-subject-mode"),
]


@csrf_exempt  # it changes nothing; any method on an unknown path gets the same JSON 404
def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    return JsonResponse({"error_code": 404, "message": "HTTP 404 Not Found"}, status=404)


urlpatterns: list[URLPattern] = [
    *(
        re_path(rf"^{pattern}/?$" if pattern else r"^$", view.as_view(), name=name)
        for pattern, view, name in _TABLE
    ),
    re_path(r"^(?P<rest>.*)$", not_found, name="registry-not-found"),
]
