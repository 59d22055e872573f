"""A small read-only Schema Registry client for Spark's Python workers (stdlib HTTP only).

Executors must decode records with the schema each record's framing names, so every Python
worker asks the registry for the ids it meets. It needs three calls —
``GET /schemas/ids/{id}``, ``GET /subjects/{s}/versions/{v}`` (each with
``?format=serialized`` for Protobuf) — so this module speaks them with ``urllib`` rather than
importing confluent-kafka's ``SchemaRegistryClient`` (and httpx, and its auth stack) into
every worker; it also sends Weir's ``Authorization: Token <key>``, which Confluent's client
cannot. Answers are cached per process (schemas never change under an id).

The client is a frozen value: it travels inside the function Spark pickles for its tasks.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

__all__ = ["Reference", "Registered", "RegistryAccess", "RegistryError"]

_MEDIA = "application/vnd.schemaregistry.v1+json"
_cache: dict[tuple[str, str], Any] = {}
_cache_lock = threading.Lock()


class RegistryError(RuntimeError):
    """The registry answered with an error, or could not be reached."""

    def __init__(self, message: str, *, status: int | None = None, code: int | None = None):
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass(frozen=True, slots=True)
class Reference:
    """A schema reference: the name the schema uses, and the subject version it names."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class Registered:
    """One schema as the registry answers it (``schema`` is base64 for serialized Protobuf)."""

    schema_id: int
    schema_type: str
    schema: str
    references: tuple[Reference, ...] = ()

    @classmethod
    def from_json(cls, body: dict[str, Any], schema_id: int | None = None) -> Registered:
        refs = tuple(
            Reference(r["name"], r["subject"], int(r["version"]))
            for r in body.get("references") or ()
        )
        found = body.get("id", schema_id)
        return cls(int(found or 0), body.get("schemaType", "AVRO"), body["schema"], refs)


@dataclass(frozen=True, slots=True)
class RegistryAccess:
    """Where the registry is and how to sign in (HTTP Basic or Weir's token)."""

    url: str
    auth: tuple[str, str] | None = None
    token: str | None = None
    timeout_s: float = 30.0

    def get(self, path: str, *, cache: bool = True) -> Any:
        """``GET`` ``path`` (below the registry URL) → the JSON answer."""
        key = (self.url, path)
        if cache:
            with _cache_lock:
                if key in _cache:
                    return _cache[key]
        request = urllib.request.Request(self.url.rstrip("/") + path, headers=self._headers())
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                body = json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            raise _error(exc, self.url + path) from None
        except (urllib.error.URLError, OSError) as exc:
            raise RegistryError(f"schema registry {self.url} cannot be reached: {exc}") from None
        if cache:
            with _cache_lock:
                _cache[key] = body
        return body

    def schema_by_id(self, schema_id: int, *, serialized: bool = False) -> Registered:
        query = "?format=serialized" if serialized else ""
        body = self.get(f"/schemas/ids/{schema_id}{query}")
        return Registered.from_json(body, schema_id)

    def version(self, subject: str, version: int | str, *, serialized: bool = False) -> Registered:
        """One subject version; ``"latest"`` is asked afresh every time (never cached)."""
        query = "?format=serialized" if serialized else ""
        path = f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/{version}{query}"
        return Registered.from_json(self.get(path, cache=version != "latest"))

    def references(
        self, refs: tuple[Reference, ...], *, serialized: bool = False
    ) -> dict[str, Registered]:
        """Every schema ``refs`` reach (transitively), by reference name, deepest first."""
        found: dict[str, Registered] = {}

        def visit(ref: Reference) -> None:
            if ref.name in found:
                return
            target = self.version(ref.subject, ref.version, serialized=serialized)
            for inner in target.references:
                visit(inner)
            found[ref.name] = target

        for ref in refs:
            visit(ref)
        return found

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": f"{_MEDIA}, application/json"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        elif self.auth:
            pair = f"{self.auth[0]}:{self.auth[1]}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        return headers


def _error(exc: urllib.error.HTTPError, where: str) -> RegistryError:
    try:
        body = json.loads(exc.read())
        code, message = body.get("error_code"), body.get("message", "")
    except (ValueError, AttributeError):
        code, message = None, exc.reason
    return RegistryError(
        f"schema registry answered {exc.code} for {where}: {message}", status=exc.code, code=code
    )
