"""``.proto`` text from a ``FileDescriptorProto``: the canonical string the registry stores.

Confluent prints a Protobuf schema from its parsed form in a fixed layout (see
``ProtobufSchemaUtils.toString``): ``syntax``, ``package``, imports, file options, then every
message (each: reserved ranges, options, fields, oneofs, extension ranges, ``extend`` blocks,
nested messages, nested enums), then enums, top-level ``extend`` blocks and services; two-space
indents and a blank line between sections. This module prints the same layout from a
descriptor, so text and serialized input print alike. Two choices differ from printing the
source back, both because a descriptor no longer knows how the source spelled things:

- type names are fully qualified with a leading dot (``.pkg.Msg``), as in the descriptor and
  as Confluent's normalized form spells them;
- map fields print as ``map<K, V>`` (their synthetic ``*Entry`` message is not printed), so
  the text compiles again with protoc, which refuses an explicit ``map_entry`` option.

The output always compiles back to an equal descriptor (the round trip the tests check).
Options print from the option messages' set fields; custom options need ``options_view`` to
turn the raw options into a message that knows the extensions (the caller's descriptor pool).
"""

from __future__ import annotations

from collections.abc import Callable

from google.protobuf import descriptor_pb2, text_encoding, text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

__all__ = ["print_file"]

F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    F.TYPE_DOUBLE: "double",
    F.TYPE_FLOAT: "float",
    F.TYPE_INT64: "int64",
    F.TYPE_UINT64: "uint64",
    F.TYPE_INT32: "int32",
    F.TYPE_FIXED64: "fixed64",
    F.TYPE_FIXED32: "fixed32",
    F.TYPE_BOOL: "bool",
    F.TYPE_STRING: "string",
    F.TYPE_BYTES: "bytes",
    F.TYPE_UINT32: "uint32",
    F.TYPE_SFIXED32: "sfixed32",
    F.TYPE_SFIXED64: "sfixed64",
    F.TYPE_SINT32: "sint32",
    F.TYPE_SINT64: "sint64",
}
_MAX_FIELD_NUMBER = 536870911
OptionsView = Callable[[Message], Message]


def scalar_name(field_type: int) -> str | None:
    """The ``.proto`` keyword of a scalar field type; None for messages, enums and groups."""
    return _SCALARS.get(field_type)


def print_file(
    fdp: descriptor_pb2.FileDescriptorProto,
    *,
    options_view: OptionsView | None = None,
    normalize: bool = False,
) -> str:
    """The ``.proto`` text of one file. ``normalize`` applies the printing half of
    Confluent's normalization (sorted options and imports, no ``syntax`` line for proto2);
    reordering fields and constants is :mod:`.normalize`'s job on the descriptor."""
    return _Printer(options_view or (lambda options: options), normalize).file(fdp)


class _Printer:
    def __init__(self, options_view: OptionsView, normalize: bool) -> None:
        self.view = options_view
        self.normalize = normalize
        self.proto3 = False

    # -- file ---------------------------------------------------------------------------
    def file(self, fdp: descriptor_pb2.FileDescriptorProto) -> str:
        syntax = fdp.syntax or "proto2"
        self.proto3 = syntax == "proto3"
        out: list[str] = []
        if syntax == "editions":
            out.append(f'edition = "{_edition_name(fdp.edition)}";\n')
        elif not self.normalize or self.proto3:
            out.append(f'syntax = "{syntax}";\n')
        if fdp.package:
            out.append(f"package {fdp.package};\n")
        public = set(fdp.public_dependency)
        weak = set(fdp.weak_dependency)
        imports = [(d, i in public, i in weak) for i, d in enumerate(fdp.dependency)]
        if imports:
            if self.normalize:
                imports = sorted(set(imports), key=lambda item: (item[1], item[2], item[0]))
            out.append("\n")
            for name, is_public, is_weak in imports:
                kind = "public " if is_public else "weak " if is_weak else ""
                out.append(f'import {kind}"{_quote(name)}";\n')
        options = self.options(fdp.options)
        if options:
            out.append("\n")
            out.extend(f"option {option};\n" for option in options)
        types = [self.message(m, f"{_prefix(fdp.package)}{m.name}") for m in fdp.message_type]
        types += [self.enum(e) for e in fdp.enum_type]
        if types:
            out.append("\n")
            out.extend(types)
        extends = self.extends(fdp.extension)
        if extends:
            out.append("\n")
            out.extend(extends)
        if fdp.service:
            out.append("\n")
            out.extend(self.service(s) for s in fdp.service)
        return "".join(out)

    # -- messages -----------------------------------------------------------------------
    def message(self, msg: descriptor_pb2.DescriptorProto, full_name: str) -> str:
        sections: list[list[str]] = []
        reserved = [_range(r.start, r.end - 1) for r in msg.reserved_range]
        reserved += [f'"{_quote(n)}"' for n in msg.reserved_name]
        sections.append([f"reserved {r};\n" for r in reserved])
        sections.append([f"option {o};\n" for o in self.options(msg.options)])
        maps = {f".{full_name}.{n.name}": n for n in msg.nested_type if n.options.map_entry}
        real_oneofs = _real_oneofs(msg)
        sections.append(
            [
                self.field(f, maps)
                for f in msg.field
                if not (f.HasField("oneof_index") and f.oneof_index in real_oneofs)
            ]
        )
        oneofs = []
        for index in sorted(real_oneofs):
            decl = msg.oneof_decl[index]
            members = [f for f in msg.field if f.HasField("oneof_index") and f.oneof_index == index]
            body = [f"option {o};\n" for o in self.options(decl.options)]
            body += [self.field(f, maps, in_oneof=True) for f in members]
            oneofs.append(_block(f"oneof {decl.name}", [body]))
        sections.append(oneofs)
        sections.append([self.extension_range(r) for r in msg.extension_range])
        sections.append(self.extends(msg.extension))
        nested = [
            self.message(n, f"{full_name}.{n.name}")
            for n in msg.nested_type
            if not n.options.map_entry
        ]
        nested += [self.enum(e) for e in msg.enum_type]
        sections.append(nested)
        return _block(f"message {msg.name}", sections)

    def field(
        self,
        field: descriptor_pb2.FieldDescriptorProto,
        maps: dict[str, descriptor_pb2.DescriptorProto],
        *,
        in_oneof: bool = False,
    ) -> str:
        if field.type == F.TYPE_GROUP:
            raise ValueError(f"field {field.name!r}: groups are not supported")
        entry = maps.get(field.type_name) if field.label == F.LABEL_REPEATED else None
        if entry is not None:
            key, value = entry.field[0], entry.field[1]
            type_text = f"map<{_type(key)}, {_type(value)}>"
            label = ""
        else:
            type_text = _type(field)
            label = "" if in_oneof else self.label(field)
        options = []
        if field.HasField("default_value"):
            options.append(f"default = {_default(field)}")
        if field.HasField("json_name"):
            options.append(f'json_name = "{_quote(field.json_name)}"')
        options += self.options(field.options)
        return f"{label}{type_text} {field.name} = {field.number}{_inline(options)};\n"

    def label(self, field: descriptor_pb2.FieldDescriptorProto) -> str:
        if field.label == F.LABEL_REPEATED:
            return "repeated "
        if field.label == F.LABEL_REQUIRED:
            return "required "
        if field.proto3_optional or not self.proto3:
            return "optional "
        return ""

    def extension_range(self, r: descriptor_pb2.DescriptorProto.ExtensionRange) -> str:
        return f"extensions {_range(r.start, r.end - 1)}{_inline(self.options(r.options))};\n"

    def extends(self, fields: list[descriptor_pb2.FieldDescriptorProto]) -> list[str]:
        by_extendee: dict[str, list[str]] = {}
        for field in fields:
            by_extendee.setdefault(field.extendee, []).append(self.field(field, {}))
        return [_block(f"extend {name}", [body]) for name, body in by_extendee.items()]

    # -- enums and services -------------------------------------------------------------
    def enum(self, enum: descriptor_pb2.EnumDescriptorProto) -> str:
        reserved = [_range(r.start, r.end) for r in enum.reserved_range]
        reserved += [f'"{_quote(n)}"' for n in enum.reserved_name]
        body = [f"option {o};\n" for o in self.options(enum.options)]
        body += [f"{v.name} = {v.number}{_inline(self.options(v.options))};\n" for v in enum.value]
        return _block(f"enum {enum.name}", [[f"reserved {r};\n" for r in reserved], body])

    def service(self, service: descriptor_pb2.ServiceDescriptorProto) -> str:
        methods = []
        for m in service.method:
            request = f"{'stream ' if m.client_streaming else ''}{m.input_type}"
            response = f"{'stream ' if m.server_streaming else ''}{m.output_type}"
            options = self.options(m.options)
            tail = _block("", [[f"option {o};\n" for o in options]])[:-1] + ";" if options else ";"
            methods.append(f"rpc {m.name} ({request}) returns ({response}){tail}\n")
        options = [f"option {o};\n" for o in self.options(service.options)]
        return _block(f"service {service.name}", [options, methods])

    # -- options ------------------------------------------------------------------------
    def options(self, options: Message) -> list[str]:
        """``name = value`` for every option set, custom ones as ``(full.name)``."""
        view = self.view(options)
        items: list[str] = []
        for fd, value in view.ListFields():
            name = f"({fd.full_name})" if fd.is_extension else fd.name
            values = value if _is_repeated(fd) else [value]
            items.extend(f"{name} = {_option_value(fd, v)}" for v in values)
        return sorted(items) if self.normalize else items


def _is_repeated(fd: FieldDescriptor) -> bool:
    return bool(fd.is_repeated)


def _option_value(fd: FieldDescriptor, value: object) -> str:
    if fd.type == FieldDescriptor.TYPE_ENUM:
        enum_value = fd.enum_type.values_by_number.get(value)  # type: ignore[union-attr,arg-type]
        return enum_value.name if enum_value is not None else str(value)
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    if fd.type == FieldDescriptor.TYPE_STRING:
        return f'"{_quote(str(value))}"'
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return f'"{text_encoding.CEscape(value, as_utf8=False)}"'  # type: ignore[arg-type]
    if fd.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
        inner = text_format.MessageToString(value, as_one_line=True)  # type: ignore[arg-type]
        return f"{{ {inner} }}" if inner else "{}"
    return str(value)


def _type(field: descriptor_pb2.FieldDescriptorProto) -> str:
    return scalar_name(field.type) or field.type_name


def _default(field: descriptor_pb2.FieldDescriptorProto) -> str:
    value = field.default_value
    if field.type == F.TYPE_STRING:
        return f'"{_quote(value)}"'
    if field.type == F.TYPE_BYTES:
        return f'"{value}"'  # the descriptor keeps bytes defaults C-escaped already
    return value


def _quote(text: str) -> str:
    return text_encoding.CEscape(text, as_utf8=True)


def _range(start: int, end_inclusive: int) -> str:
    if start == end_inclusive:
        return str(start)
    end = "max" if end_inclusive >= _MAX_FIELD_NUMBER else str(end_inclusive)
    return f"{start} to {end}"


def _real_oneofs(msg: descriptor_pb2.DescriptorProto) -> set[int]:
    """Indexes of the oneofs the source declared (not proto3 ``optional``'s synthetic ones)."""
    return {f.oneof_index for f in msg.field if f.HasField("oneof_index") and not f.proto3_optional}


def _inline(options: list[str]) -> str:
    return f" [{', '.join(options)}]" if options else ""


def _block(head: str, sections: list[list[str]]) -> str:
    """``head {`` + each non-empty section after a newline, indented + ``}``."""
    out = [f"{head} {{" if head else " {"]
    for section in sections:
        if not section:
            continue
        out.append("\n")
        for item in section:
            out.extend(f"  {line}\n" if line else "\n" for line in item.rstrip("\n").split("\n"))
    out.append("}\n")
    return "".join(out)


def _prefix(package: str) -> str:
    return f"{package}." if package else ""


def _edition_name(edition: int) -> str:
    name = descriptor_pb2.Edition.Name(edition)
    return name.removeprefix("EDITION_")
