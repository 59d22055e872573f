"""Confluent's JSON Schema compatibility rules: the differences between an original schema
and an update, named as Confluent names them.

Each schema is first classified the way Confluent's validator library models it: ``true`` or
``{}`` accepts anything (*empty*), ``false`` nothing; ``allOf``/``anyOf``/``oneOf`` (and a
``type`` list) are *combined*; then ``enum``, ``not``, or the type (``integer`` is a number that
requires integers; without ``type`` the keywords present decide). ``$ref`` is followed (a pair
already being compared counts as compatible, which ends recursion).

Two schemas of different kinds are ``TYPE_CHANGED``, unless the original accepts nothing or
the update accepts anything; a non-combined schema may become a ``oneOf``/``anyOf`` with a
compatible branch (``SUM_TYPE_EXTENDED``). Same kinds compare keyword by keyword: limits that
loosen are compatible, limits that tighten are not (``MAX_LENGTH_DECREASED``,
``MINIMUM_INCREASED``...); objects compare ``required`` and properties under the content model
(open: no ``additionalProperties`` limit and no ``patternProperties``; an update may add a
property to an open original only with an empty schema, ``PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL``
otherwise; a closed update may not drop a property, ``PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL``);
enums may grow; combined schemas need every branch of the smaller side matched with a
compatible branch of the other (a maximum bipartite matching). Which kinds are compatible is
:data:`COMPATIBLE` (Confluent's ``SchemaDiff.COMPATIBLE_CHANGES``).

Not covered: tuple ``items`` arrays, ``dependencies``, ``unevaluated*`` and ``not``
narrowing; they compare as unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["COMPATIBLE", "Difference", "compare"]

COMPATIBLE = frozenset(
    [
        "ID_CHANGED",
        "DESCRIPTION_CHANGED",
        "TITLE_CHANGED",
        "DEFAULT_CHANGED",
        "SCHEMA_REMOVED",
        "TYPE_EXTENDED",
        "MAX_LENGTH_INCREASED",
        "MAX_LENGTH_REMOVED",
        "MIN_LENGTH_DECREASED",
        "MIN_LENGTH_REMOVED",
        "PATTERN_REMOVED",
        "MAXIMUM_INCREASED",
        "MAXIMUM_REMOVED",
        "MINIMUM_DECREASED",
        "MINIMUM_REMOVED",
        "EXCLUSIVE_MAXIMUM_INCREASED",
        "EXCLUSIVE_MAXIMUM_REMOVED",
        "EXCLUSIVE_MINIMUM_DECREASED",
        "EXCLUSIVE_MINIMUM_REMOVED",
        "MULTIPLE_OF_REDUCED",
        "MULTIPLE_OF_REMOVED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        "REQUIRED_ATTRIBUTE_REMOVED",
        "MAX_PROPERTIES_INCREASED",
        "MAX_PROPERTIES_REMOVED",
        "MIN_PROPERTIES_DECREASED",
        "MIN_PROPERTIES_REMOVED",
        "ADDITIONAL_PROPERTIES_ADDED",
        "ADDITIONAL_PROPERTIES_EXTENDED",
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "MAX_ITEMS_INCREASED",
        "MAX_ITEMS_REMOVED",
        "MIN_ITEMS_DECREASED",
        "MIN_ITEMS_REMOVED",
        "UNIQUE_ITEMS_REMOVED",
        "ADDITIONAL_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_EXTENDED",
        "ENUM_ARRAY_EXTENDED",
        "COMBINED_TYPE_EXTENDED",
        "PRODUCT_TYPE_NARROWED",
        "SUM_TYPE_EXTENDED",
        "NOT_TYPE_NARROWED",
    ]
)

# Confluent's wording by family of difference; {update}/{original} become "new"/"old".
_WORDING: list[tuple[frozenset[str], str]] = [
    (
        frozenset(
            [
                "MAXIMUM_ADDED",
                "MINIMUM_ADDED",
                "EXCLUSIVE_MAXIMUM_ADDED",
                "EXCLUSIVE_MINIMUM_ADDED",
                "MULTIPLE_OF_ADDED",
                "MAX_LENGTH_ADDED",
                "MIN_LENGTH_ADDED",
                "PATTERN_ADDED",
                "REQUIRED_ATTRIBUTE_ADDED",
                "MAX_PROPERTIES_ADDED",
                "MIN_PROPERTIES_ADDED",
                "MAX_ITEMS_ADDED",
                "MIN_ITEMS_ADDED",
                "UNIQUE_ITEMS_ADDED",
                "ADDITIONAL_ITEMS_REMOVED",
                "ADDITIONAL_PROPERTIES_REMOVED",
            ]
        ),
        "The keyword at path '{path}' in the {update} schema is not present in the {original}"
        " schema",
    ),
    (
        frozenset(
            [
                "MIN_LENGTH_INCREASED",
                "MINIMUM_INCREASED",
                "EXCLUSIVE_MINIMUM_INCREASED",
                "MIN_PROPERTIES_INCREASED",
                "MULTIPLE_OF_EXPANDED",
                "MIN_ITEMS_INCREASED",
            ]
        ),
        "The value at path '{path}' in the {update} schema is more than its value in the"
        " {original} schema",
    ),
    (
        frozenset(
            [
                "MAX_LENGTH_DECREASED",
                "MAXIMUM_DECREASED",
                "MAX_ITEMS_DECREASED",
                "EXCLUSIVE_MAXIMUM_DECREASED",
                "MAX_PROPERTIES_DECREASED",
            ]
        ),
        "The value at path '{path}' in the {update} schema is less than its value in the"
        " {original} schema",
    ),
    (
        frozenset(["PATTERN_CHANGED", "MULTIPLE_OF_CHANGED"]),
        "The value at path '{path}' is different between the {update} and {original} schema",
    ),
    (
        frozenset(
            [
                "ADDITIONAL_ITEMS_NARROWED",
                "ENUM_ARRAY_NARROWED",
                "SUM_TYPE_NARROWED",
                "ADDITIONAL_PROPERTIES_NARROWED",
            ]
        ),
        "An array or combined type at path '{path}' has fewer elements in the {update} schema"
        " than the {original} schema",
    ),
    (
        frozenset(["PRODUCT_TYPE_EXTENDED", "SUM_TYPE_EXTENDED"]),
        "An array or combined type at path '{path}' has more elements in the {update} schema"
        " than the {original} schema",
    ),
    (
        frozenset(
            [
                "TYPE_CHANGED",
                "TYPE_NARROWED",
                "COMBINED_TYPE_CHANGED",
                "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
                "ENUM_ARRAY_CHANGED",
            ]
        ),
        "A type at path '{path}' is different between the {update} schema and the {original}"
        " schema",
    ),
    (
        frozenset({"PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"}),
        "The {update} schema has an open content model and has a property or item at path"
        " '{path}' which is missing in the {original} schema",
    ),
    (
        frozenset({"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"}),
        "The {update} schema has an unopen content model and has a required property at path"
        " '{path}' which is missing in the {original} schema",
    ),
    (
        frozenset({"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"}),
        "The {update} schema has a closed content model and is missing a property or item"
        " present at path '{path}' in the {original} schema",
    ),
    (
        frozenset({"PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"}),
        "A property or item is missing in the {update} schema but present at path '{path}' in"
        " the {original} schema and is not covered by its partially open content model",
    ),
    (
        frozenset({"PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"}),
        "The {update} schema has a property or item at path '{path}' which is missing in the"
        " {original} schema and is not covered by its partially open content model",
    ),
]


@dataclass(frozen=True, slots=True)
class Difference:
    """One difference: Confluent's type name and the JSON path where it is (``#/...``)."""

    kind: str
    path: str

    def describe(self, update: str, original: str) -> str:
        """Confluent's ``{errorType:..., description:...}`` text."""
        text = next((w for kinds, w in _WORDING if self.kind in kinds), "")
        text = text.format(path=self.path, update=update, original=original)
        return f'{{errorType:"{self.kind}", description:"{text}"}}'


Side = tuple[Any, Any]  # a (sub)schema and the resolver for its $refs

_COMBINERS = ("allOf", "anyOf", "oneOf")
_KIND_KEYWORDS = {
    "object": ("properties", "required", "additionalProperties", "patternProperties"),
    "array": ("items", "additionalItems", "maxItems", "minItems", "uniqueItems"),
    "string": ("maxLength", "minLength", "pattern", "format"),
    "number": ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf"),
}


def compare(original: Side, update: Side) -> list[Difference]:
    """Every difference between ``original`` and ``update`` (compatible ones included)."""
    diff = _Diff(set())
    diff.compare(original, update, ())
    return diff.found


def _deref(side: Side, seen: int = 0) -> Side:
    node, resolver = side
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 64:
        resolved = resolver.lookup(node["$ref"])
        node, resolver, seen = resolved.contents, resolved.resolver, seen + 1
    return node, resolver


def _kind(node: Any) -> str:
    """What Confluent's validator library would make of ``node``."""
    if node is True or node == {}:
        return "empty"
    if node is False:
        return "false"
    if not isinstance(node, dict):
        return "empty"
    types = node.get("type")
    if any(c in node for c in _COMBINERS) or (isinstance(types, list) and len(types) > 1):
        return "combined"
    if "enum" in node or "const" in node:
        return "enum"
    if isinstance(types, list):
        types = types[0] if types else None
    if types in ("integer", "number"):
        return "number"
    if isinstance(types, str):
        return types
    if "not" in node:
        return "not"
    present = [k for k, words in _KIND_KEYWORDS.items() if any(w in node for w in words)]
    return present[0] if len(present) == 1 else ("empty" if not present else "combined")


def _combined(node: dict[str, Any]) -> tuple[str, list[Any]]:
    """A combined schema's criterion and branches (a ``type`` list is an ``anyOf``)."""
    for criterion in _COMBINERS:
        if criterion in node:
            return criterion, list(node[criterion])
    types = node.get("type")
    if isinstance(types, list):
        rest = {k: v for k, v in node.items() if k != "type"}
        return "anyOf", [{**rest, "type": t} for t in types]
    rest = {k: v for k, v in node.items() if k != "type"}
    return "anyOf", [
        {**{k: v for k, v in rest.items() if k in words}, "type": kind}
        for kind, words in _KIND_KEYWORDS.items()
        if any(w in node for w in words)
    ]


class _Diff:
    def __init__(self, in_progress: set[tuple[int, int]]) -> None:
        self.in_progress = in_progress  # shared with sub-diffs: ends recursive $refs
        self.found: list[Difference] = []

    def add(self, path: tuple[str, ...], kind: str) -> None:
        self.found.append(Difference(kind, "#/" + "/".join(path)))

    def sub(self, original: Side, update: Side, path: tuple[str, ...]) -> _Diff:
        """A trial comparison whose differences are only kept if the caller wants them."""
        trial = _Diff(self.in_progress)
        trial.compare(original, update, path)
        return trial

    @property
    def compatible(self) -> bool:
        return all(d.kind in COMPATIBLE for d in self.found)

    def compare(self, original: Side, update: Side, path: tuple[str, ...]) -> None:
        original, update = _deref(original), _deref(update)
        key = (id(original[0]), id(update[0]))
        if key in self.in_progress:
            return
        self.in_progress.add(key)
        try:
            self._compare(original, update, path)
        finally:
            self.in_progress.discard(key)

    def _compare(self, original: Side, update: Side, path: tuple[str, ...]) -> None:
        o_kind, u_kind = _kind(original[0]), _kind(update[0])
        if o_kind != "combined" and u_kind == "combined":
            criterion, branches = _combined(update[0])
            if len(branches) == 1 or criterion != "allOf":
                for branch in branches:
                    trial = self.sub(original, (branch, update[1]), path)
                    if trial.compatible:
                        self.found += trial.found
                        if len(branches) > 1:
                            self.add(path, "SUM_TYPE_EXTENDED")
                        return
        elif o_kind == "combined" and u_kind != "combined":
            branches = _combined(original[0])[1]
            if len(branches) == 1:
                trial = self.sub((branches[0], original[1]), update, path)
                if trial.compatible:
                    self.found += trial.found
                    return
        if o_kind != u_kind:
            if o_kind != "false" and u_kind != "empty":
                self.add(path, "TYPE_CHANGED")
            return
        o, u = original[0], update[0]
        if not isinstance(o, dict) or not isinstance(u, dict):
            return
        for keyword, kind in (("description", "DESCRIPTION_CHANGED"), ("title", "TITLE_CHANGED")):
            if o.get(keyword) != u.get(keyword):
                self.add(path, kind)
        compare_kind: dict[str, Callable[[Side, Side, tuple[str, ...]], None]] = {
            "number": self._number,
            "string": self._string,
            "enum": self._enum,
            "object": self._object,
            "array": self._array,
            "combined": self._combined,
        }
        if o_kind in compare_kind:
            compare_kind[o_kind](original, update, path)

    def _limits(
        self, o: dict[str, Any], u: dict[str, Any], path: tuple[str, ...], *names: str
    ) -> None:
        """ADDED/REMOVED/INCREASED/DECREASED for numeric keywords (``maxLength`` ->
        ``MAX_LENGTH_...``)."""
        for keyword in names:
            a, b = _limit(o, keyword), _limit(u, keyword)
            if a == b:
                continue
            name = "".join("_" + c if c.isupper() else c.upper() for c in keyword)
            change = (
                "ADDED"
                if a is None
                else "REMOVED"
                if b is None
                else "INCREASED"
                if a < b
                else "DECREASED"
            )
            self.add((*path, keyword), f"{name}_{change}")

    def _number(self, original: Side, update: Side, path: tuple[str, ...]) -> None:
        o, u = original[0], update[0]
        self._limits(o, u, path, "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum")
        a, b = o.get("multipleOf"), u.get("multipleOf")
        if a != b:
            if a is None or b is None:
                self.add(
                    (*path, "multipleOf"),
                    "MULTIPLE_OF_ADDED" if a is None else "MULTIPLE_OF_REMOVED",
                )
            elif b % a == 0:
                self.add((*path, "multipleOf"), "MULTIPLE_OF_EXPANDED")
            elif a % b == 0:
                self.add((*path, "multipleOf"), "MULTIPLE_OF_REDUCED")
            else:
                self.add((*path, "multipleOf"), "MULTIPLE_OF_CHANGED")
        o_int, u_int = _is_integer(o), _is_integer(u)
        if o_int != u_int:
            self.add(path, "TYPE_EXTENDED" if o_int else "TYPE_NARROWED")

    def _string(self, original: Side, update: Side, path: tuple[str, ...]) -> None:
        o, u = original[0], update[0]
        self._limits(o, u, path, "maxLength", "minLength")
        a, b = o.get("pattern"), u.get("pattern")
        if a != b:
            kind = (
                "PATTERN_ADDED"
                if a is None
                else "PATTERN_REMOVED"
                if b is None
                else "PATTERN_CHANGED"
            )
            self.add((*path, "pattern"), kind)

    def _enum(self, original: Side, update: Side, path: tuple[str, ...]) -> None:
        a, b = _enum_values(original[0]), _enum_values(update[0])
        if a == b:
            return
        if all(v in b for v in a):
            self.add((*path, "enum"), "ENUM_ARRAY_EXTENDED")
        elif all(v in a for v in b):
            self.add((*path, "enum"), "ENUM_ARRAY_NARROWED")
        else:
            self.add((*path, "enum"), "ENUM_ARRAY_CHANGED")

    def _object(self, original: Side, update: Side, path: tuple[str, ...]) -> None:
        o, u = original[0], update[0]
        o_props, u_props = o.get("properties", {}), u.get("properties", {})
        o_req, u_req = set(o.get("required", ())), set(u.get("required", ()))
        for name in o_props:
            if name in u_props and (name in o_req) != (name in u_req):
                if name in o_req:
                    kind = "REQUIRED_ATTRIBUTE_REMOVED"
                elif _has_default(u_props[name]):
                    kind = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                else:
                    kind = "REQUIRED_ATTRIBUTE_ADDED"
                self.add((*path, "required", name), kind)
        for name in sorted(set(o_props) | set(u_props)):
            here = (*path, "properties", name)
            if name not in u_props:
                self._property_removed((o_props[name], original[1]), update, name, here)
            elif name not in o_props:
                self._property_added(original, (u_props[name], update[1]), name, u_req, here)
            else:
                self.compare((o_props[name], original[1]), (u_props[name], update[1]), here)
        self._additional(original, update, path)
        self._limits(o, u, path, "maxProperties", "minProperties")

    def _property_removed(
        self, o_prop: Side, update: Side, name: str, here: tuple[str, ...]
    ) -> None:
        if _is_open(update[0]):
            self.add(here, "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
            return
        partial = _partial(update[0], name)
        if partial is not None:
            trial = self.sub(o_prop, (partial, update[1]), here)
            self.found += trial.found
            covered = "IS" if trial.compatible else "NOT"
            self.add(here, f"PROPERTY_REMOVED_{covered}_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
        elif o_prop[0] is False:
            self.add(here, "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        else:
            self.add(here, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")

    def _property_added(
        self, original: Side, u_prop: Side, name: str, required: set[str], here: tuple[str, ...]
    ) -> None:
        if _is_open(original[0]):
            empty = _kind(_deref(u_prop)[0]) == "empty"
            self.add(
                here, f"PROPERTY_{'WITH_EMPTY_SCHEMA_' if empty else ''}ADDED_TO_OPEN_CONTENT_MODEL"
            )
            return
        partial = _partial(original[0], name)
        if partial is not None:
            trial = self.sub((partial, original[1]), u_prop, here)
            self.found += trial.found
            covered = "IS" if trial.compatible else "NOT"
            self.add(here, f"PROPERTY_ADDED_{covered}_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
        if name not in required:
            self.add(here, "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
        elif _has_default(u_prop[0]):
            self.add(here, "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL")
        else:
            self.add(here, "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")

    def _additional(self, original: Side, update: Side, path: tuple[str, ...]) -> None:
        here = (*path, "additionalProperties")
        a, b = (
            original[0].get("additionalProperties", True),
            update[0].get("additionalProperties", True),
        )
        a_permits, b_permits = a is not False, b is not False
        a_schema = a if isinstance(a, dict) else None
        b_schema = b if isinstance(b, dict) else None
        if a_permits != b_permits:
            self.add(
                here,
                "ADDITIONAL_PROPERTIES_ADDED" if b_permits else "ADDITIONAL_PROPERTIES_REMOVED",
            )
        elif a_schema is None and b_schema is not None:
            self.add(here, "ADDITIONAL_PROPERTIES_NARROWED")
        elif b_schema is None and a_schema is not None:
            self.add(here, "ADDITIONAL_PROPERTIES_EXTENDED")
        elif a_schema is not None:
            self.compare((a_schema, original[1]), (b_schema, update[1]), here)

    def _array(self, original: Side, update: Side, path: tuple[str, ...]) -> None:
        o, u = original[0], update[0]
        a, b = o.get("items", True), u.get("items", True)
        if not isinstance(a, list) and not isinstance(b, list):
            self.compare((a, original[1]), (b, update[1]), (*path, "items"))
        self._limits(o, u, path, "maxItems", "minItems")
        if bool(o.get("uniqueItems")) != bool(u.get("uniqueItems")):
            self.add(
                (*path, "uniqueItems"),
                "UNIQUE_ITEMS_REMOVED" if o.get("uniqueItems") else "UNIQUE_ITEMS_ADDED",
            )

    def _combined(self, original: Side, update: Side, path: tuple[str, ...]) -> None:
        o_crit, o_branches = _combined(original[0])
        u_crit, u_branches = _combined(update[0])
        if o_crit != u_crit:
            if (
                u_crit == "anyOf"
                or (u_crit == "oneOf" and len(o_branches) == 1)
                or (u_crit == "allOf" and len(o_branches) == 1 and len(u_branches) == 1)
            ):
                self.add(path, "COMBINED_TYPE_EXTENDED")
            else:
                self.add(path, "COMBINED_TYPE_CHANGED")
                return
        o_branches, u_branches = _distinct(o_branches), _distinct(u_branches)
        if len(o_branches) != len(u_branches):
            grew = len(o_branches) < len(u_branches)
            family = "PRODUCT" if u_crit == "allOf" else "SUM"
            self.add(path, f"{family}_TYPE_{'EXTENDED' if grew else 'NARROWED'}")
        edges: dict[int, dict[int, list[Difference]]] = {}
        for i, ob in enumerate(o_branches):
            for j, ub in enumerate(u_branches):
                trial = self.sub((ob, original[1]), (ub, update[1]), (*path, f"{o_crit}/{i}"))
                if trial.compatible:
                    edges.setdefault(i, {})[j] = trial.found
        matching = _max_matching(edges)
        for i, j in matching.items():
            self.found += edges[i][j]
        if len(matching) < min(len(o_branches), len(u_branches)):
            self.add(path, "COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _limit(node: dict[str, Any], keyword: str) -> float | None:
    value = node.get(keyword)
    # Draft 4 spells exclusive limits as booleans beside maximum/minimum: no limit of their own.
    return None if isinstance(value, bool) or not isinstance(value, (int, float)) else value


def _is_integer(node: dict[str, Any]) -> bool:
    types = node.get("type")
    return types == "integer" or types == ["integer"]


def _enum_values(node: dict[str, Any]) -> list[Any]:
    return list(node["enum"]) if "enum" in node else [node.get("const")]


def _has_default(node: Any) -> bool:
    return isinstance(node, dict) and "default" in node


def _is_open(node: dict[str, Any]) -> bool:
    # additionalProperties: {} is a schema for extra properties (partly open), as in Confluent.
    return not node.get("patternProperties") and node.get("additionalProperties", True) is True


def _partial(node: dict[str, Any], name: str) -> Any:
    """The schema a partially open content model gives an undeclared property, if any."""
    for pattern, schema in node.get("patternProperties", {}).items():
        if re.search(pattern, name):
            return schema
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _distinct(branches: list[Any]) -> list[Any]:
    out: list[Any] = []
    for branch in branches:
        if branch not in out:
            out.append(branch)
    return out


def _max_matching(edges: dict[int, dict[int, list[Difference]]]) -> dict[int, int]:
    """A maximum matching of original branches to compatible update branches (Kuhn's
    augmenting paths; branch lists are short)."""
    owner: dict[int, int] = {}  # update branch -> original branch

    def augment(i: int, visited: set[int]) -> bool:
        for j in edges.get(i, {}):
            if j not in visited:
                visited.add(j)
                if j not in owner or augment(owner[j], visited):
                    owner[j] = i
                    return True
        return False

    for i in edges:
        augment(i, set())
    return {i: j for j, i in owner.items()}
