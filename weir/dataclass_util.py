"""Building one value object from another that names the same facts the same way.

A partition's image and its ``PartitionRecord``, a broker's image and its registration, a
group member and its ``GroupMetadataValue`` entry: Weir keeps these as separate frozen
dataclasses (they change for different reasons) whose shared fields carry the same names.
``copy_fields`` carries those fields across by name, so adding one to both sides needs no
hand-written copy to be kept in step.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

__all__ = ["copy_fields"]

T = TypeVar("T")


def copy_fields(cls: type[T], source: Any, **values: Any) -> T:
    """A ``cls`` dataclass with every field ``source`` (a dataclass) has under the same name,
    then ``values`` for the rest or instead."""
    shared = {f.name for f in fields(source)} & {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{**{name: getattr(source, name) for name in shared}, **values})
