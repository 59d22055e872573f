"""JSON: JSON Schema documents, validated by ``jsonschema``, references resolved by
``referencing``, compatibility by Confluent's JSON Schema diff rules.

Parsing. The text must be a JSON object or boolean. It is checked against the meta-schema of
its ``$schema`` (drafts 4, 6, 7, 2019-09 and 2020-12; draft 7 when absent, as Confluent's
validator defaults to it), then every ``$ref`` in it must resolve: inside the document, or to
a referenced schema, whose reference ``name`` is the URL the ``$ref`` uses (Confluent's JSON
Schema references).

Text. The stored form is compact JSON in the client's key order; the normalized form sorts
keys at every level (what Confluent's ``?normalize=true`` does for JSON Schema).

Compatibility (:mod:`weir.registry.formats._json_diff`) compares an *original* schema with
an *update*, lists every difference by Confluent's name (``TYPE_CHANGED``,
``PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL``, ``REQUIRED_ATTRIBUTE_ADDED``,
``MAX_LENGTH_DECREASED``...) and reports those Confluent does not count as compatible.
BACKWARD compares old (original) with new (update); FORWARD the other way round.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema

from weir.registry.formats import _json_diff
from weir.registry.formats.base import (
    Direction,
    InvalidSchema,
    ParsedSchema,
    ResolvedReference,
    SchemaFormat,
)

__all__ = ["FORMAT", "JsonSchema", "JsonSchemaFormat"]

_DEFAULT_DRAFT = jsonschema.Draft7Validator
_ROOT_URI = "urn:weir:registry:root"  # base for a schema without an $id of its own


class JsonSchema(ParsedSchema):
    """A parsed JSON Schema: the document and a resolver for its ``$ref``s."""

    schema_type: ClassVar[str] = "JSON"

    def __init__(
        self,
        document: Any,
        resolver: Any,
        references: Sequence[ResolvedReference] = (),
    ) -> None:
        super().__init__(references)
        self.document = document
        self.resolver = resolver

    def canonical(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), ensure_ascii=False)

    def validator(self) -> jsonschema.protocols.Validator:
        """A validator of instances of this schema (its draft, its references resolvable by
        name): what a serializer checks data with (:mod:`weir.registry.serde`)."""
        cls = _validator_class(self.document)
        spec = referencing.jsonschema.specification_with(
            cls.META_SCHEMA["$schema"], default=referencing.jsonschema.DRAFT7
        )
        registry: referencing.Registry[Any] = referencing.Registry()
        for name, schema in _all_references(self.references):
            registry = registry.with_resource(
                name, referencing.Resource.from_contents(schema, default_specification=spec)
            )
        return cls(self.document, registry=registry)

    def normalized(self) -> JsonSchema:
        text = json.dumps(self.document, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
        references = sorted(set(self.references), key=lambda r: (r.name, r.subject, r.version))
        return FORMAT.parse(text, references)


class JsonSchemaFormat(SchemaFormat):
    """JSON Schema (``schemaType`` JSON)."""

    schema_type: ClassVar[str] = "JSON"

    def parse(self, text: str, references: Sequence[ResolvedReference] = ()) -> JsonSchema:
        try:
            document = json.loads(text)
        except ValueError as e:
            raise InvalidSchema(f"Invalid schema: not JSON: {e}") from e
        if not isinstance(document, (dict, bool)):
            raise InvalidSchema("Invalid schema: a JSON Schema is a JSON object or a boolean")
        validator = _validator_class(document)
        try:
            validator.check_schema(document)
        except jsonschema.SchemaError as e:
            where = "/".join(str(p) for p in e.path) or "(root)"
            raise InvalidSchema(f"Invalid schema: at {where}: {e.message}") from e
        resolver = _resolver(document, validator, references)
        for ref in _refs(document):
            try:
                resolver.lookup(ref)
            except referencing.exceptions.Unresolvable as e:
                raise InvalidSchema(
                    f"Invalid schema: $ref {ref!r} does not resolve (not in the schema and no "
                    "reference of that name)"
                ) from e
        return JsonSchema(document, resolver, references)

    def check(self, new: ParsedSchema, old: ParsedSchema, direction: str) -> list[str]:
        assert isinstance(new, JsonSchema) and isinstance(old, JsonSchema)
        if direction == Direction.BACKWARD:
            original, update, names = old, new, ("new", "old")
        else:
            original, update, names = new, old, ("old", "new")
        found = _json_diff.compare(
            (original.document, original.resolver), (update.document, update.resolver)
        )
        return [
            d.describe(update=names[0], original=names[1])
            for d in found
            if d.kind not in _json_diff.COMPATIBLE
        ]


FORMAT = JsonSchemaFormat()


def _validator_class(document: Any) -> type[jsonschema.protocols.Validator]:
    if isinstance(document, dict) and "$schema" in document:
        uri = document["$schema"]
        if not isinstance(uri, str):
            raise InvalidSchema("Invalid schema: $schema must be a string")
        known = jsonschema.validators.validator_for(document, default=None)  # type: ignore[arg-type]
        if known is None:
            raise InvalidSchema(
                f"Invalid schema: unknown $schema {uri!r} (drafts 4, 6, 7, 2019-09, 2020-12)"
            )
        return known
    return _DEFAULT_DRAFT


def _resolver(
    document: Any,
    validator: type[jsonschema.protocols.Validator],
    references: Sequence[ResolvedReference],
) -> Any:
    """A resolver over the document and, by their names, its references (transitively)."""
    spec = referencing.jsonschema.specification_with(
        validator.META_SCHEMA["$schema"], default=referencing.jsonschema.DRAFT7
    )
    registry: referencing.Registry[Any] = referencing.Registry()
    for name, schema in _all_references(references):
        registry = registry.with_resource(
            name, referencing.Resource.from_contents(schema, default_specification=spec)
        )
    root = referencing.Resource.from_contents(document, default_specification=spec)
    base = root.id() or _ROOT_URI
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        registry = registry.with_resource(base, root).crawl()
    return registry.resolver(base_uri=base)


def _all_references(references: Sequence[ResolvedReference]) -> Iterator[tuple[str, Any]]:
    for ref in references:
        if not isinstance(ref.schema, JsonSchema):
            raise InvalidSchema(
                f"Invalid schema: reference {ref.name!r} ({ref.subject} version {ref.version})"
                f" is {ref.schema.schema_type}, not JSON"
            )
        yield from _all_references(ref.schema.references)
        yield ref.name, ref.schema.document


def _refs(node: Any) -> Iterator[str]:
    """Every ``$ref`` string in a document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            elif key not in ("enum", "const", "default", "examples"):
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)
