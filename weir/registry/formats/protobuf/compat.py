"""Protobuf compatibility, by Confluent's rules (its ``protobuf/diff`` package).

Confluent compares two files as trees: messages and enums by name, fields by number, oneofs by
name, and records every :class:`Difference` with the path where it was found (``#/Msg/3``,
``#/Msg/Inner/kind``). Some kinds of difference are compatible (a field or message added or
removed, a field renamed, enum constants changed, string <-> bytes...), the others are not:

- ``PACKAGE_CHANGED``, ``MESSAGE_REMOVED``;
- ``FIELD_KIND_CHANGED`` (scalar/enum vs message vs map), ``FIELD_SCALAR_KIND_CHANGED``
  (across wire-compatible groups: int32/int64/uint32/uint64/bool/enum; sint32/sint64;
  string/bytes; fixed32/sfixed32; fixed64/sfixed64; float; double),
  ``FIELD_NAMED_TYPE_CHANGED`` (another message type, or the same one changed incompatibly);
- ``REQUIRED_FIELD_ADDED`` / ``REQUIRED_FIELD_REMOVED`` (proto2 ``required``);
- ``ONEOF_FIELD_REMOVED``, ``MULTIPLE_FIELDS_MOVED_TO_ONEOF``,
  ``FIELD_MOVED_TO_EXISTING_ONEOF``.

``compare(original, update)`` is Confluent's ``SchemaDiff.compare``; a BACKWARD check is
``compare(old, new)`` (the new schema reads the old data) and FORWARD is ``compare(new, old)``.
Messages are worded as Confluent's (``Difference{fullPath='#/A/1', type=FIELD_KIND_CHANGED}``).
Differences are produced in a deterministic order (names and numbers sorted).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2

from weir.registry.formats.protobuf.printer import scalar_name

__all__ = ["COMPATIBLE_CHANGES", "Difference", "FileSide", "TypeInfo", "compare"]

F = descriptor_pb2.FieldDescriptorProto
Message = descriptor_pb2.DescriptorProto
Enum = descriptor_pb2.EnumDescriptorProto

COMPATIBLE_CHANGES = frozenset(
    {
        "MESSAGE_ADDED",
        "MESSAGE_MOVED",
        "ENUM_ADDED",
        "ENUM_REMOVED",
        "ENUM_CONST_ADDED",
        "ENUM_CONST_CHANGED",
        "ENUM_CONST_REMOVED",
        "FIELD_ADDED",
        "FIELD_REMOVED",
        "FIELD_NAME_CHANGED",
        "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
        "ONEOF_ADDED",
        "ONEOF_REMOVED",
        "ONEOF_FIELD_ADDED",
    }
)
# Scalars whose encodings read each other (protobuf's "updating a message type" rules).
_SCALAR_KIND = {
    "int32": "GENERAL_NUMBER",
    "int64": "GENERAL_NUMBER",
    "uint32": "GENERAL_NUMBER",
    "uint64": "GENERAL_NUMBER",
    "bool": "GENERAL_NUMBER",
    "sint32": "SIGNED_NUMBER",
    "sint64": "SIGNED_NUMBER",
    "string": "STRING_OR_BYTES",
    "bytes": "STRING_OR_BYTES",
    "fixed32": "FIXED32",
    "sfixed32": "FIXED32",
    "fixed64": "FIXED64",
    "sfixed64": "FIXED64",
    "float": "FLOAT",
    "double": "DOUBLE",
}


@dataclass(frozen=True, slots=True)
class Difference:
    """One change between two schemas, where it was found."""

    type: str
    path: str

    def __str__(self) -> str:
        return f"Difference{{fullPath='{self.path}', type={self.type}}}"


@dataclass(frozen=True, slots=True)
class TypeInfo:
    """A message or enum one side can name: its declaration, package and origin."""

    proto: Message | Enum
    package: str
    origin: tuple[str, int] | None  # (subject, version) of a reference; ("", -1) = own file

    @property
    def is_map(self) -> bool:
        return isinstance(self.proto, Message) and self.proto.options.map_entry


@dataclass(slots=True)
class FileSide:
    """One schema as the comparison sees it: its file and every type it can name."""

    file: descriptor_pb2.FileDescriptorProto
    types: dict[str, TypeInfo] = field(default_factory=dict)

    def add_file(
        self, fdp: descriptor_pb2.FileDescriptorProto, origin: tuple[str, int] | None
    ) -> None:
        prefix = f"{fdp.package}." if fdp.package else ""
        for msg in fdp.message_type:
            self._add_message(msg, prefix + msg.name, fdp.package, origin)
        for enum in fdp.enum_type:
            self.types[prefix + enum.name] = TypeInfo(enum, fdp.package, origin)

    def _add_message(
        self, msg: Message, full: str, package: str, origin: tuple[str, int] | None
    ) -> None:
        self.types[full] = TypeInfo(msg, package, origin)
        for nested in msg.nested_type:
            self._add_message(nested, f"{full}.{nested.name}", package, origin)
        for enum in msg.enum_type:
            self.types[f"{full}.{enum.name}"] = TypeInfo(enum, package, origin)


class _Context:
    def __init__(self, original: FileSide, update: FileSide) -> None:
        self.original = original
        self.update = update
        self.path: list[str] = []
        self.in_progress: set[int] = set()
        self.diffs: list[Difference] = []

    def sub(self, local_name: str) -> _Context:
        ctx = _Context(self.original, self.update)
        ctx.in_progress = set(self.in_progress)
        ctx.path = local_name.split(".")
        return ctx

    @contextlib.contextmanager
    def enter(self, part: str) -> Iterator[None]:
        self.path.append(part)
        try:
            yield
        finally:
            self.path.pop()

    def add(self, kind: str) -> None:
        self.diffs.append(Difference(kind, "#/" + "/".join(self.path)))

    def compatible(self) -> bool:
        return all(d.type in COMPATIBLE_CHANGES for d in self.diffs)


def compare(original: FileSide, update: FileSide) -> list[Difference]:
    """Every difference from ``original`` to ``update`` (Confluent's ``SchemaDiff``)."""
    ctx = _Context(original, update)
    if original.file.package != update.file.package:
        ctx.add("PACKAGE_CHANGED")
    _compare_types(ctx, original.file, update.file)
    return ctx.diffs


def _compare_types(
    ctx: _Context,
    original: descriptor_pb2.FileDescriptorProto | Message,
    update: descriptor_pb2.FileDescriptorProto | Message,
) -> None:
    o_msgs, u_msgs = _messages(original), _messages(update)
    for name in sorted(o_msgs.keys() | u_msgs.keys()):
        with ctx.enter(name):
            if name not in u_msgs:
                ctx.add("MESSAGE_REMOVED")
            elif name not in o_msgs:
                ctx.add("MESSAGE_ADDED")
            else:
                _compare_message(ctx, o_msgs[name][1], u_msgs[name][1])
                if o_msgs[name][0] != u_msgs[name][0]:
                    # Compatible: a message index refers to the writer's own schema.
                    ctx.add("MESSAGE_MOVED")
    o_enums, u_enums = _enums(original), _enums(update)
    for name in sorted(o_enums.keys() | u_enums.keys()):
        with ctx.enter(name):
            if name not in u_enums:
                ctx.add("ENUM_REMOVED")
            elif name not in o_enums:
                ctx.add("ENUM_ADDED")
            else:
                _compare_enum(ctx, o_enums[name], u_enums[name])


def _messages(
    parent: descriptor_pb2.FileDescriptorProto | Message,
) -> dict[str, tuple[int, Message]]:
    is_file = isinstance(parent, descriptor_pb2.FileDescriptorProto)
    found = parent.message_type if is_file else parent.nested_type  # type: ignore[union-attr]
    # Map entries are part of their field, never messages of their own.
    kept = [m for m in found if not m.options.map_entry]
    return {m.name: (i, m) for i, m in enumerate(kept)}


def _enums(parent: descriptor_pb2.FileDescriptorProto | Message) -> dict[str, Enum]:
    return {e.name: e for e in parent.enum_type}


def _compare_enum(ctx: _Context, original: Enum, update: Enum) -> None:
    o = {v.number: v.name for v in original.value}
    u = {v.number: v.name for v in update.value}
    for number in sorted(o.keys() | u.keys()):
        with ctx.enter(str(number)):
            if number not in u:
                ctx.add("ENUM_CONST_REMOVED")
            elif number not in o:
                ctx.add("ENUM_CONST_ADDED")
            elif o[number] != u[number]:
                ctx.add("ENUM_CONST_CHANGED")


def _oneof_members(msg: Message) -> dict[str, dict[int, F]]:
    """The oneofs a source declared (not proto3 ``optional``'s), by name, fields by number."""
    members: dict[str, dict[int, F]] = {}
    for f in msg.field:
        if f.HasField("oneof_index") and not f.proto3_optional:
            members.setdefault(msg.oneof_decl[f.oneof_index].name, {})[f.number] = f
    return members


def _compare_message(ctx: _Context, original: Message, update: Message) -> None:
    key = id(original)
    if key not in ctx.in_progress:  # a recursive type is compared once per chain
        ctx.in_progress.add(key)
        try:
            _compare_fields(ctx, original, update)
        finally:
            ctx.in_progress.discard(key)
    _compare_types(ctx, original, update)


def _compare_fields(ctx: _Context, original: Message, update: Message) -> None:
    o_oneofs, u_oneofs = _oneof_members(original), _oneof_members(update)
    o_in_oneof = {n: name for name, fs in o_oneofs.items() for n in fs}
    u_in_oneof = {n: name for name, fs in u_oneofs.items() for n in fs}
    o_top = {f.number: f for f in original.field if f.number not in o_in_oneof}
    u_top = {f.number: f for f in update.field if f.number not in u_in_oneof}
    o_all = {f.number: f for f in original.field}
    u_all = {f.number: f for f in update.field}

    for name in sorted(u_oneofs):
        with ctx.enter(name):
            moved = existing = 0
            for number in u_oneofs[name]:
                if o_top.pop(number, None) is not None:
                    moved += 1  # and not reported as removed below
                elif number in o_in_oneof:
                    existing += 1
            if moved > 1:
                ctx.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF")
            elif moved == 1 and existing > 0:
                ctx.add("FIELD_MOVED_TO_EXISTING_ONEOF")

    for name in sorted(o_oneofs.keys() | u_oneofs.keys()):
        with ctx.enter(name):
            if name not in u_oneofs:
                ctx.add("ONEOF_REMOVED")
            elif name not in o_oneofs:
                ctx.add("ONEOF_ADDED")
            else:
                o_f, u_f = o_oneofs[name], u_oneofs[name]
                for number in sorted(o_f.keys() | u_f.keys()):
                    with ctx.enter(str(number)):
                        if number not in u_f:
                            # Moved elsewhere only relaxes exclusivity; gone entirely is not.
                            if number not in u_all:
                                ctx.add("ONEOF_FIELD_REMOVED")
                        elif number not in o_f:
                            ctx.add("ONEOF_FIELD_ADDED")
                        else:
                            _compare_field(ctx, o_f[number], u_f[number])

    for number in sorted(o_top.keys() | u_top.keys()):
        with ctx.enter(str(number)):
            o, u = o_top.get(number), u_top.get(number)
            if u is None:
                assert o is not None
                required = o.label == F.LABEL_REQUIRED
                ctx.add("REQUIRED_FIELD_REMOVED" if required else "FIELD_REMOVED")
            elif o is None:
                required = u.label == F.LABEL_REQUIRED
                ctx.add("REQUIRED_FIELD_ADDED" if required else "FIELD_ADDED")
            else:
                _compare_field(ctx, o, u)

    # Fields whose oneof membership changed are compared by number here, once.
    for number in sorted(o_all.keys() & u_all.keys()):
        o_name, u_name = o_in_oneof.get(number), u_in_oneof.get(number)
        if (o_name is None and u_name is None) or (o_name is not None and o_name == u_name):
            continue
        with ctx.enter(str(number)):
            _compare_field(ctx, o_all[number], u_all[number])


# A field's type as the rules see it: ("scalar", name) | ("map", key, value) | ("named", full).
_Type = tuple[str, ...]


def _field_type(side: FileSide, f: F) -> _Type:
    scalar = scalar_name(f.type)
    if scalar is not None:
        return ("scalar", scalar)
    full = f.type_name.lstrip(".")
    info = side.types.get(full)
    if info is not None and info.is_map and isinstance(info.proto, Message):
        key, value = info.proto.field[0], info.proto.field[1]
        return ("map", *_field_type(side, key), "|", *_field_type(side, value))
    return ("named", full)


def _split_map(t: _Type) -> tuple[_Type, _Type]:
    bar = t.index("|")
    return t[1:bar], t[bar + 1 :]


def _compare_field(ctx: _Context, original: F, update: F) -> None:
    if original.name != update.name:
        ctx.add("FIELD_NAME_CHANGED")
    _compare_type(ctx, _field_type(ctx.original, original), _field_type(ctx.update, update))


def _kind(side: FileSide, t: _Type) -> str:
    if t[0] == "scalar":
        return "SCALAR"
    if t[0] == "map":
        return "MAP"
    info = side.types.get(t[1])
    return "SCALAR" if info is not None and isinstance(info.proto, Enum) else "MESSAGE"


def _scalar_kind(side: FileSide, t: _Type) -> str:
    return "GENERAL_NUMBER" if t[0] == "named" else _SCALAR_KIND[t[1]]  # named = an enum


def _compare_type(ctx: _Context, original: _Type, update: _Type) -> None:
    o_kind, u_kind = _kind(ctx.original, original), _kind(ctx.update, update)
    if o_kind != u_kind:
        ctx.add("FIELD_KIND_CHANGED")
    elif o_kind == "SCALAR":
        if _scalar_kind(ctx.original, original) != _scalar_kind(ctx.update, update):
            ctx.add("FIELD_SCALAR_KIND_CHANGED")
    elif o_kind == "MAP":
        (o_key, o_value), (u_key, u_value) = _split_map(original), _split_map(update)
        _compare_type(ctx, o_key, u_key)
        _compare_type(ctx, o_value, u_value)
    else:
        _compare_named(ctx, original[1], update[1])


def _compare_named(ctx: _Context, original: str, update: str) -> None:
    o_info, u_info = ctx.original.types.get(original), ctx.update.types.get(update)
    if o_info is None or u_info is None:
        if original != update:
            ctx.add("FIELD_NAMED_TYPE_CHANGED")
        return
    o_local = _local_name(original, o_info.package)
    u_local = _local_name(update, u_info.package)
    if o_local != u_local:
        ctx.add("FIELD_NAMED_TYPE_CHANGED")
        return
    if o_info.origin is not None and o_info.origin == u_info.origin:
        return  # the same file on both sides (or one subject-version): nothing to compare
    assert isinstance(o_info.proto, Message) and isinstance(u_info.proto, Message)
    sub = ctx.sub(o_local)
    _compare_message(sub, o_info.proto, u_info.proto)
    ctx.diffs.extend(sub.diffs)
    if not sub.compatible():
        ctx.add("FIELD_NAMED_TYPE_CHANGED")


def _local_name(full: str, package: str) -> str:
    return full[len(package) + 1 :] if package and full.startswith(package + ".") else full
