"""Confluent's Protobuf normalization, applied to a descriptor.

``?normalize=true`` makes schemas that differ only in declaration order equal: imports sorted
and deduplicated; fields sorted by number; oneofs ordered by their first field's number;
enum constants by number then name; reserved and extension ranges by start (reserved names
after the numbers). Messages and enums keep their order: a Confluent-framed record names its
message by its index in the file. Type names need no work here (a descriptor's are already
fully qualified); sorting options and dropping proto2's ``syntax`` line happen when printing
(``print_file(normalize=True)``).
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2

__all__ = ["normalize_file"]


def normalize_file(fdp: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """A normalized copy of ``fdp``."""
    out = descriptor_pb2.FileDescriptorProto()
    out.CopyFrom(fdp)
    public = {fdp.dependency[i] for i in fdp.public_dependency}
    weak = {fdp.dependency[i] for i in fdp.weak_dependency}
    deps = sorted(set(fdp.dependency))
    del out.dependency[:], out.public_dependency[:], out.weak_dependency[:]
    out.dependency.extend(deps)
    out.public_dependency.extend(i for i, d in enumerate(deps) if d in public)
    out.weak_dependency.extend(i for i, d in enumerate(deps) if d in weak)
    for msg in out.message_type:
        _message(msg)
    for enum in out.enum_type:
        _enum(enum)
    _sort(out.extension, key=lambda f: (f.extendee, f.number))
    return out


def _sort(repeated, key) -> None:  # type: ignore[no-untyped-def]
    items = sorted(repeated, key=key)
    copies = [type(item)() for item in items]
    for copy, item in zip(copies, items, strict=True):
        copy.CopyFrom(item)
    del repeated[:]
    repeated.extend(copies)


def _message(msg: descriptor_pb2.DescriptorProto) -> None:
    _sort(msg.field, key=lambda f: f.number)
    _oneofs(msg)
    _sort(msg.reserved_range, key=lambda r: r.start)
    msg.reserved_name[:] = sorted(msg.reserved_name)
    _sort(msg.extension_range, key=lambda r: r.start)
    _sort(msg.extension, key=lambda f: (f.extendee, f.number))
    for nested in msg.nested_type:
        _message(nested)
    for enum in msg.enum_type:
        _enum(enum)


def _oneofs(msg: descriptor_pb2.DescriptorProto) -> None:
    """Real oneofs by their first field's number, proto3 ``optional``'s synthetic ones after
    (protoc requires them last), and every field's ``oneof_index`` renumbered to match."""
    first: dict[int, tuple[int, int]] = {}
    for f in msg.field:
        if f.HasField("oneof_index"):
            rank = (1 if f.proto3_optional else 0, f.number)
            first[f.oneof_index] = min(first.get(f.oneof_index, rank), rank)
    order = sorted(first, key=lambda i: first[i])
    if not order:
        return
    new_index = {old: new for new, old in enumerate(order)}
    decls = [msg.oneof_decl[i] for i in order]
    copies = [descriptor_pb2.OneofDescriptorProto() for _ in decls]
    for copy, decl in zip(copies, decls, strict=True):
        copy.CopyFrom(decl)
    del msg.oneof_decl[:]
    msg.oneof_decl.extend(copies)
    for f in msg.field:
        if f.HasField("oneof_index"):
            f.oneof_index = new_index[f.oneof_index]


def _enum(enum: descriptor_pb2.EnumDescriptorProto) -> None:
    _sort(enum.value, key=lambda v: (v.number, v.name))
    _sort(enum.reserved_range, key=lambda r: r.start)
    enum.reserved_name[:] = sorted(enum.reserved_name)
