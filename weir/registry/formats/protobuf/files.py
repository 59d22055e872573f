"""The files a Protobuf schema may import without a reference, and how to read a descriptor
out of protoc's generated Python.

Confluent's clients never send a reference for Google's well-known types
(``google/protobuf/*.proto``), Google's common types (``google/type/*.proto``) or Confluent's
own ``confluent/*.proto`` (``meta.proto``, ``type/decimal.proto``...): every reader has them
built in. Weir does the same. Each built-in file is kept as a serialized
``FileDescriptorProto`` (to build descriptor pools) and is reachable by protoc through an
include directory: grpcio-tools ships ``google/protobuf``; ``google/type`` comes from
googleapis-common-protos' ``.proto`` files; Confluent's files exist only as generated Python
inside confluent-kafka, so their descriptors are read out of that source (without importing
it: its package imports the whole Schema Registry client) and printed back to ``.proto`` text
(:func:`printed_builtins`), written beside each schema protoc compiles.

protoc's in-process API (``grpc_tools._protoc_compiler.get_protos``) returns generated Python
rather than descriptors; every generated module carries its file's serialized descriptor as
the one bytes literal passed to ``AddSerializedFile``, which :func:`descriptor_from_gencode`
reads with :mod:`ast` (never by executing the code).
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterator
from pathlib import Path

from google.protobuf import descriptor_pb2

__all__ = [
    "BUILTIN_PREFIXES",
    "builtin_file",
    "descriptor_from_gencode",
    "include_dirs",
    "is_builtin",
    "printed_builtins",
]

# As confluent-kafka's _is_builtin: imports under these prefixes never need a reference.
BUILTIN_PREFIXES = ("google/protobuf/", "google/type/", "confluent/")


def is_builtin(name: str) -> bool:
    """Whether an import path names a file every Confluent client has built in."""
    return name.startswith(BUILTIN_PREFIXES)


def descriptor_from_gencode(code: bytes | str) -> bytes:
    """The serialized ``FileDescriptorProto`` inside one generated ``*_pb2.py``."""
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "AddSerializedFile"
            and node.args
        ):
            value = ast.literal_eval(node.args[0])
            if isinstance(value, bytes):
                return value
    raise ValueError("no AddSerializedFile call in generated code")


def builtin_file(name: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The descriptor of a built-in file, or None when ``name`` is not one."""
    serialized = _builtin_files().get(name)
    if serialized is None:
        return None
    return descriptor_pb2.FileDescriptorProto.FromString(serialized)


def include_dirs() -> tuple[str, ...]:
    """Directories protoc searches for built-in imports, after the schema's own files."""
    return _include_dirs()


def _site_dir(package: str) -> Path | None:
    """The directory that holds ``package`` (a namespace package may have several)."""
    import importlib

    try:
        module = importlib.import_module(package)
    except ImportError:
        return None
    paths = list(getattr(module, "__path__", []))
    return Path(paths[0]) if paths else None


def _gencode_files() -> Iterator[tuple[str, bytes]]:
    """(import path, serialized descriptor) of every built-in file found on this machine."""
    roots: list[tuple[str, Path | None]] = [
        ("google/protobuf/", _site_dir("google.protobuf")),
        ("google/type/", _site_dir("google.type")),
    ]
    confluent = _site_dir("confluent_kafka")
    for prefix, root in roots:
        if root is None:
            continue
        for path in sorted(root.glob("*_pb2.py")):
            yield from _read_gencode(path, prefix)
    if confluent is not None:
        base = confluent / "schema_registry" / "confluent"
        for path in sorted(base.rglob("*_pb2.py")):
            yield from _read_gencode(path, "confluent/")


def _read_gencode(path: Path, prefix: str) -> Iterator[tuple[str, bytes]]:
    try:
        serialized = descriptor_from_gencode(path.read_bytes())
    except (ValueError, SyntaxError, OSError):
        return
    name = descriptor_pb2.FileDescriptorProto.FromString(serialized).name
    if name.startswith(prefix):
        yield name, serialized


@functools.cache
def _builtin_files() -> dict[str, bytes]:
    return dict(_gencode_files())


@functools.cache
def _include_dirs() -> tuple[str, ...]:
    import grpc_tools

    dirs = [os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")]
    google_type = _site_dir("google.type")
    if google_type is not None:
        dirs.append(str(google_type.parent.parent))
    return tuple(dirs)


@functools.cache
def printed_builtins() -> dict[str, str]:
    """``.proto`` text of the built-in files no include directory has (Confluent's, shipped
    as generated Python only); the compiler writes them beside each schema it compiles."""
    from weir.registry.formats.protobuf.printer import print_file

    return {
        name: print_file(descriptor_pb2.FileDescriptorProto.FromString(serialized))
        for name, serialized in _builtin_files().items()
        if name.startswith("confluent/")
    }
