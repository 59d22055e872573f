"""The PROTOBUF schema format, with Confluent Schema Registry's semantics.

Theory of operation: every schema, whatever form it arrived in (``.proto`` text or a base64
``FileDescriptorProto``), becomes one validated descriptor (:mod:`.compiler`, protoc and
protobuf's descriptor pools), and everything else is computed from that descriptor: the
canonical ``.proto`` text (:mod:`.printer`), the ``serialized`` output format (base64 of the
descriptor, what confluent-kafka's deserializer fetches), normalization (:mod:`.normalize`)
and compatibility (:mod:`.compat`, Confluent's rules).

References are imports: a reference's ``name`` is the import path the schema uses
(``"other.proto"``) and its schema is that file. Built-in files (Google's well-known and
common types, Confluent's own) import without a reference (:mod:`.files`).
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Sequence

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from weir.registry.formats.base import (
    InvalidSchema,
    ParsedSchema,
    ResolvedReference,
    SchemaFormat,
)
from weir.registry.formats.protobuf.compat import COMPATIBLE_CHANGES, FileSide, compare
from weir.registry.formats.protobuf.compiler import build_pool, compile_schema
from weir.registry.formats.protobuf.files import builtin_file
from weir.registry.formats.protobuf.normalize import normalize_file
from weir.registry.formats.protobuf.printer import print_file

__all__ = ["FORMAT", "ProtobufFormat", "ProtobufSchema"]


class ProtobufSchema(ParsedSchema):
    """One valid Protobuf file and the references its imports resolve to."""

    schema_type = "PROTOBUF"

    def __init__(
        self,
        fdp: descriptor_pb2.FileDescriptorProto,
        references: Sequence[ResolvedReference] = (),
        *,
        is_normalized: bool = False,
    ) -> None:
        super().__init__(references)
        self.file = fdp
        self.is_normalized = is_normalized

    def dependencies(self) -> dict[str, descriptor_pb2.FileDescriptorProto]:
        """Every file the references provide, by import path (transitively)."""
        return _dependencies(self.references)

    @functools.cached_property
    def pool(self) -> descriptor_pool.DescriptorPool:
        """A descriptor pool holding this file and all it imports."""
        return build_pool(self.file, self.dependencies())

    def canonical(self) -> str:
        return self._text

    @functools.cached_property
    def _text(self) -> str:
        return print_file(self.file, options_view=self._options_view, normalize=self.is_normalized)

    def normalized(self) -> ProtobufSchema:
        refs = sorted(set(self.references), key=lambda r: (r.name, r.subject, r.version))
        return ProtobufSchema(normalize_file(self.file), refs, is_normalized=True)

    def formatted(self, fmt: str) -> str:
        if fmt == "serialized":
            return base64.standard_b64encode(self.file.SerializeToString()).decode("ascii")
        return self.canonical()

    def side(self) -> FileSide:
        """This schema as :func:`.compat.compare` sees it."""
        side = FileSide(self.file)
        direct = {r.name: (r.subject, r.version) for r in self.references}
        for name, fdp in self.dependencies().items():
            side.add_file(fdp, direct.get(name))
        for name in _builtin_imports(self.file, self.dependencies()):
            fdp = builtin_file(name)
            if fdp is not None:
                side.add_file(fdp, None)
        side.add_file(self.file, ("", -1))
        return side

    def _options_view(self, options: Message) -> Message:
        """``options`` re-read by the pool's own options type, so that custom options (the
        extensions this file or its imports declare) show up as fields to print."""
        try:
            desc = self.pool.FindMessageTypeByName(options.DESCRIPTOR.full_name)
        except KeyError:
            return options
        cls = message_factory.GetMessageClass(desc)
        return cls.FromString(options.SerializeToString())


def _dependencies(
    references: Sequence[ResolvedReference],
) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    found: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for ref in references:
        schema = ref.schema
        if not isinstance(schema, ProtobufSchema):
            raise InvalidSchema(
                f"reference {ref.name!r} is a {schema.schema_type} schema, not PROTOBUF"
            )
        for name, fdp in schema.dependencies().items():
            found.setdefault(name, fdp)
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.CopyFrom(schema.file)
        fdp.name = ref.name
        found[ref.name] = fdp
    return found


def _builtin_imports(
    fdp: descriptor_pb2.FileDescriptorProto,
    deps: dict[str, descriptor_pb2.FileDescriptorProto],
) -> list[str]:
    """Built-in files reachable from ``fdp`` through its imports."""
    seen: list[str] = []
    stack = [fdp]
    visited: set[str] = set()
    while stack:
        current = stack.pop()
        for name in current.dependency:
            if name in visited:
                continue
            visited.add(name)
            if name in deps:
                stack.append(deps[name])
            else:
                builtin = builtin_file(name)
                if builtin is not None:
                    seen.append(name)
                    stack.append(builtin)
    return seen


class ProtobufFormat(SchemaFormat):
    """Protobuf schemas: ``.proto`` text or base64 descriptors; Confluent's rules."""

    schema_type = "PROTOBUF"

    def parse(self, text: str, references: Sequence[ResolvedReference] = ()) -> ProtobufSchema:
        fdp = compile_schema(text, _dependencies(references))
        schema = ProtobufSchema(fdp, references)
        try:
            schema.canonical()  # e.g. proto2 groups, which Weir does not print
        except ValueError as e:
            raise InvalidSchema(str(e)) from e
        return schema

    def check(self, new: ParsedSchema, old: ParsedSchema, direction: str) -> list[str]:
        assert isinstance(new, ProtobufSchema) and isinstance(old, ProtobufSchema)
        # BACKWARD: the new schema reads old data, Confluent's compare(old, new).
        original, update = (old, new) if direction == "BACKWARD" else (new, old)
        diffs = compare(original.side(), update.side())
        return [str(d) for d in diffs if d.type not in COMPATIBLE_CHANGES]


FORMAT = ProtobufFormat()
