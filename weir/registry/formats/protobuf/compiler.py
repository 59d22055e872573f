"""Schema text to a validated ``FileDescriptorProto``, with protoc and protobuf's pools.

A Protobuf schema reaches the registry in one of two forms, as in Confluent: ``.proto`` text
(proto2 or proto3), or a base64 serialized ``FileDescriptorProto`` (what confluent-kafka's
``ProtobufSerializer`` registers). Both end as a descriptor:

1. Base64 first: text made only of base64 characters that decodes to a descriptor is one
   (``.proto`` text always has braces, semicolons or spaces, which base64 never has).
2. Otherwise protoc compiles the text: grpcio-tools' bundled protoc, called in-process
   (``get_protos``: about a millisecond, no subprocess) on a temporary directory holding the
   schema and, at their import paths, the ``.proto`` text of its references (printed from
   their descriptors). protoc's errors come back structured, and the first becomes
   :class:`InvalidSchema` with its 1-based line and column.
   protoc refuses ``option map_entry = true;``, which Confluent's Java serializer writes
   for map fields (the synthetic ``XEntry`` message printed out, with
   ``repeated XEntry x = N;``). A pre-pass (:func:`_lift_map_entries`) blanks those options
   out (spaces, so protoc's line and column numbers stay right) and remembers their
   messages; the flag is set again on the compiled descriptor, and the pool of step 3 then
   checks that each such message really has a map entry's shape. The schema is then the
   same as if written with ``map<K, V>`` (same canonical text, same id).
3. Either way the file is then built into a fresh ``DescriptorPool`` with its references and
   the built-in files it imports (:mod:`.files`): unknown types, duplicate or reserved field
   numbers, bad map entries and missing imports fail there, in both forms alike.

The file is named ``default`` afterwards, as Confluent names a schema's own file; each
reference's descriptor carries the reference name (its import path), as the clients do.
"""

from __future__ import annotations

import base64
import binascii
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError

from weir.registry.formats.base import InvalidSchema
from weir.registry.formats.protobuf import files
from weir.registry.formats.protobuf.printer import print_file

__all__ = ["DEFAULT_NAME", "build_pool", "compile_schema"]

DEFAULT_NAME = "default"
# The name protoc sees for the schema itself: no import path can collide with it.
_SOURCE_NAME = "__weir_schema__.proto"
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+")
FileSet = Mapping[str, descriptor_pb2.FileDescriptorProto]


def compile_schema(text: str, dependencies: FileSet) -> descriptor_pb2.FileDescriptorProto:
    """The schema ``text`` means, given its references' descriptors by import path; the
    result has been built into a pool (:func:`build_pool`), or :class:`InvalidSchema`."""
    if not text.strip():
        raise InvalidSchema("empty Protobuf schema")
    fdp = _from_base64(text)
    if fdp is None:
        text, map_entries = _lift_map_entries(text)
        fdp = _from_text(text, dependencies)
        _restore_map_entries(fdp, map_entries)
    fdp.name = DEFAULT_NAME
    build_pool(fdp, dependencies)
    return fdp


def build_pool(
    fdp: descriptor_pb2.FileDescriptorProto, dependencies: FileSet
) -> descriptor_pool.DescriptorPool:
    """A pool holding ``fdp`` and everything it imports, or :class:`InvalidSchema`."""
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(file: descriptor_pb2.FileDescriptorProto, chain: tuple[str, ...]) -> None:
        for name in file.dependency:
            if name in added:
                continue
            if name in chain:
                raise InvalidSchema(f"import cycle: {' -> '.join((*chain, name))}")
            dep = dependencies.get(name) or files.builtin_file(name)
            if dep is None:
                raise InvalidSchema(
                    f"import {name!r} has no schema reference with that name "
                    f"(and is not a built-in file)"
                )
            add(dep, (*chain, name))
        try:
            pool.Add(file)
        except (TypeError, ValueError) as e:
            raise InvalidSchema(f"invalid Protobuf schema {file.name!r}: {_pool_error(e)}") from e
        added.add(file.name)

    add(fdp, (fdp.name,))
    return pool


def _from_base64(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    stripped = text.strip()
    if not stripped or not _BASE64.fullmatch(stripped):
        return None
    try:
        data = base64.b64decode(stripped, validate=False)
        fdp = descriptor_pb2.FileDescriptorProto.FromString(data)
    except (binascii.Error, DecodeError, ValueError):
        return None
    # Bytes that happen to decode but describe nothing are not a schema.
    if not (fdp.message_type or fdp.enum_type or fdp.service or fdp.package or fdp.syntax):
        return None
    return fdp


# Comments and string literals (skipped whole), identifiers, and single characters.
_TOKEN = re.compile(
    r"""//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[A-Za-z_][\w.]*|\S""",
    re.DOTALL,
)
_MAP_ENTRY_OPTION = ["option", "map_entry", "=", "true", ";"]


def _lift_map_entries(text: str) -> tuple[str, list[tuple[str, ...]]]:
    """``text`` without its ``option map_entry = true;`` statements (blanked), and the
    paths (nested message names) of the messages that declared one."""
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    words = [t[0] for t in tokens]
    scopes: list[str | None] = []  # one per open brace: a message's name, else None
    found: list[tuple[str, ...]] = []
    blanked = list(text)
    for i, word in enumerate(words):
        if word == "{":
            is_message = i >= 2 and words[i - 2] == "message"
            scopes.append(words[i - 1] if is_message else None)
        elif word == "}" and scopes:
            scopes.pop()
        elif (
            word == "option"
            and words[i : i + 5] == _MAP_ENTRY_OPTION
            and scopes
            and all(scope is not None for scope in scopes)
        ):
            found.append(tuple(scope for scope in scopes if scope is not None))
            for at in range(tokens[i][1], tokens[i + 4][2]):
                if blanked[at] != "\n":
                    blanked[at] = " "
    return "".join(blanked), found


def _restore_map_entries(
    fdp: descriptor_pb2.FileDescriptorProto, paths: list[tuple[str, ...]]
) -> None:
    """Set ``map_entry`` again on the messages at ``paths``, each checked for a map entry's
    shape first (protobuf's pool refuses a wrong one with no useful message)."""
    for path in paths:
        messages, parent, message = fdp.message_type, None, None
        for name in path:
            parent, message = message, next((m for m in messages if m.name == name), None)
            if message is None:
                break  # protoc placed it elsewhere (never seen); the pool judges the rest
            messages = message.nested_type
        if message is None:
            continue
        problem = _not_a_map_entry(message, parent, ".".join(filter(None, (fdp.package, *path))))
        if problem:
            raise InvalidSchema(f"message {'.'.join(path)} sets map_entry but {problem}")
        message.options.map_entry = True


def _not_a_map_entry(
    message: descriptor_pb2.DescriptorProto,
    parent: descriptor_pb2.DescriptorProto | None,
    full_name: str,
) -> str:
    """Why ``message`` cannot be a map entry, or ``""``."""
    F = descriptor_pb2.FieldDescriptorProto
    fields = sorted((f.number, f.name, f.label) for f in message.field)
    if [(n, name) for n, name, _ in fields] != [(1, "key"), (2, "value")]:
        return "its fields are not exactly key = 1 and value = 2"
    if any(label == F.LABEL_REPEATED for *_, label in fields):
        return "its key or value is repeated"
    if message.nested_type or message.enum_type or message.oneof_decl or message.extension:
        return "it declares more than a key and a value"
    users = (
        [] if parent is None else [f for f in parent.field if f.type_name.lstrip(".") == full_name]
    )
    if len(users) != 1 or users[0].label != F.LABEL_REPEATED:
        return "no one repeated field of its enclosing message has it as its type"
    return ""


def _from_text(text: str, dependencies: FileSet) -> descriptor_pb2.FileDescriptorProto:
    from grpc_tools import _protoc_compiler

    with tempfile.TemporaryDirectory(prefix="weir-protobuf-") as root:
        sources = {n: print_file(d) for n, d in dependencies.items()}
        if any("confluent/" in source for source in (text, *sources.values())):
            # Only then: every file written costs a create and an unlink per parse.
            sources = {**files.printed_builtins(), **sources}
        for name, source in sources.items():
            path = Path(root, name).resolve()
            if not path.is_relative_to(Path(root).resolve()):
                raise InvalidSchema(f"reference name {name!r} is not a relative import path")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(source, encoding="utf-8")
        Path(root, _SOURCE_NAME).write_text(text, encoding="utf-8")
        include = [root.encode(), *(d.encode() for d in files.include_dirs())]
        try:
            generated = _protoc_compiler.get_protos(_SOURCE_NAME.encode(), include)
        except _protoc_compiler.ProtocErrors as e:
            raise InvalidSchema(_protoc_error(e)) from e
    return descriptor_pb2.FileDescriptorProto.FromString(
        files.descriptor_from_gencode(generated[-1][1])
    )


def _protoc_error(errors: Exception) -> str:
    """protoc's first error as ``file:line:column: message`` (1-based, as protoc prints)."""
    found = errors.errors()  # type: ignore[attr-defined]
    if not found:
        return "invalid Protobuf schema"
    first = found[0]
    filename = first.filename.decode() if isinstance(first.filename, bytes) else first.filename
    message = first.message.decode() if isinstance(first.message, bytes) else first.message
    where = "schema" if filename == _SOURCE_NAME else f"reference {filename!r}"
    if first.line >= 0:
        return f"{where}, line {first.line + 1}, column {first.column + 1}: {message}"
    return f"{where}: {message}"


def _pool_error(error: Exception) -> str:
    return str(error).removeprefix("Couldn't build proto file into descriptor pool: ")
