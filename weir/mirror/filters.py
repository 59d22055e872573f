"""MirrorMaker 2's default topic and group filters: which topics and groups a flow copies.

The semantics are MM2's ``DefaultTopicFilter`` and ``DefaultGroupFilter``: a setting is a
Kafka ``LIST`` (split at commas with surrounding white space, after trimming the whole value),
its items are regular expressions joined with ``|``, and a name is selected when it *fully*
matches the include pattern and does not fully match the exclude pattern. A blank setting
compiles to no pattern at all, which matches nothing: ``topics=`` copies no topic, and
``topics.exclude=`` excludes none.

MM2's defaults (from its source):

- ``topics`` ``.*``; ``topics.exclude`` ``.*[\\-\\.]internal, .*\\.replica, __.*``
- ``groups`` ``.*``; ``groups.exclude`` ``console-consumer-.*, connect-.*, __.*``

Patterns are Java regular expressions compiled here with Python's ``re``; the two agree on the
constructs these lists use (classes, escapes, ``.*``, alternation, anchors). A pattern that
does not compile is refused when the configuration is read, naming its key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "GROUPS_EXCLUDE_DEFAULT",
    "GROUPS_INCLUDE_DEFAULT",
    "TOPICS_EXCLUDE_DEFAULT",
    "TOPICS_INCLUDE_DEFAULT",
    "NameFilter",
    "compile_pattern_list",
    "parse_list",
]

TOPICS_INCLUDE_DEFAULT = ".*"
TOPICS_EXCLUDE_DEFAULT = r".*[\-\.]internal, .*\.replica, __.*"
GROUPS_INCLUDE_DEFAULT = ".*"
GROUPS_EXCLUDE_DEFAULT = "console-consumer-.*, connect-.*, __.*"

_COMMA = re.compile(r"\s*,\s*")


def parse_list(value: str) -> tuple[str, ...]:
    """A Kafka ``ConfigDef.Type.LIST`` value: trimmed, then split at commas; blank is empty."""
    trimmed = value.strip()
    if not trimmed:
        return ()
    return tuple(_COMMA.split(trimmed))


def compile_pattern_list(items: tuple[str, ...], *, key: str) -> re.Pattern[str] | None:
    """MM2's ``MirrorUtils.compilePatternList``: None (match nothing) for an empty list."""
    if not items:
        return None
    try:
        return re.compile("|".join(items))
    except re.error as exc:
        raise ValueError(f"{key}: invalid regular expression {','.join(items)!r}: {exc}") from None


@dataclass(frozen=True, slots=True)
class NameFilter:
    """An include/exclude pair of full-match patterns: MM2's Default{Topic,Group}Filter."""

    include: re.Pattern[str] | None
    exclude: re.Pattern[str] | None

    @classmethod
    def from_lists(
        cls, include: str, exclude: str, *, include_key: str, exclude_key: str
    ) -> NameFilter:
        """Build from the raw setting values; errors name the key."""
        return cls(
            compile_pattern_list(parse_list(include), key=include_key),
            compile_pattern_list(parse_list(exclude), key=exclude_key),
        )

    def included(self, name: str) -> bool:
        """Whether ``name`` fully matches the include list."""
        return self.include is not None and self.include.fullmatch(name) is not None

    def excluded(self, name: str) -> bool:
        """Whether ``name`` fully matches the exclude list."""
        return self.exclude is not None and self.exclude.fullmatch(name) is not None

    def matches(self, name: str) -> bool:
        """Included and not excluded: ``shouldReplicateTopic`` / ``shouldReplicateGroup``."""
        return self.included(name) and not self.excluded(name)
