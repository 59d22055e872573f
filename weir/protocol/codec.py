"""Request decoding and response encoding on top of kio's generated schemas.

Theory of operation
-------------------
A frame starts with the request header; its first four bytes (API key, API version) pick the
kio schema, whose ``__header_schema__`` says whether the header is v1 (legacy) or v2
(flexible, with tagged fields). The body follows the header. A Produce body is read by
``produce_request`` instead of kio, so that its record batches stay views of the frame (the
server's frames are ``bytearray``s; the log stamps and writes the view): kio would copy them.
Anything that does not parse is a ``ProtocolError``: the server closes the connection,
because after an unparseable request the stream cannot be trusted (Kafka does the same). One
exception is kept: ApiVersions with an unsupported version is answered with
UNSUPPORTED_VERSION and the supported range, in the v0 format every client can read (KIP-511).

Responses are written by kio's writers into ``_ChunkWriter``. A Fetch response's records are
given as ``RecordsRegion`` — a ``bytes`` subclass that only *claims* the length of the file
regions it stands for — so kio writes the right length prefix and the writer splits the output
around it: the server then sends the regions with ``sendfile`` (zero copy), never reading the
log into memory.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from kio.index import load_request_schema, load_response_schema
from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from weir.protocol.api_keys import ApiKey
from weir.protocol.produce_request import read_produce_request

__all__ = [
    "API_VERSIONS_KEY",
    "FileRegion",
    "ProtocolError",
    "RecordsRegion",
    "Request",
    "ResponseChunks",
    "UnsupportedVersionError",
    "decode_request",
    "encode_response",
    "encode_unsupported_api_versions",
]

# The server answers an unsupported ApiVersions request itself (KIP-511).
API_VERSIONS_KEY = ApiKey.API_VERSIONS
_KEY_VERSION = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")


class FileRegion(Protocol):
    """A byte range of an open file (the log's ``FileSlice`` satisfies this)."""

    @property
    def file(self) -> Any: ...
    @property
    def position(self) -> int: ...
    @property
    def size(self) -> int: ...


class ProtocolError(Exception):
    """The request cannot be parsed; the connection must be closed."""


@dataclass(eq=False)  # eq=False: an exception stays hashable and compares by identity
class UnsupportedVersionError(ProtocolError):
    """A known API at a version Weir does not implement; the correlation id is what an
    ApiVersions request is answered with (KIP-511)."""

    api_key: int
    api_version: int
    correlation_id: int

    def __str__(self) -> str:
        return f"API {self.api_key} version {self.api_version} is not supported"


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded request: header fields plus the kio body entity."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any
    size: int


class RecordsRegion(bytes):
    """Stands in for a records field whose bytes live in log segment files."""

    regions: tuple[FileRegion, ...]
    total: int

    def __new__(cls, regions: Sequence[FileRegion]) -> RecordsRegion:
        obj = super().__new__(cls)
        obj.regions = tuple(regions)
        obj.total = sum(region.size for region in regions)
        return obj

    def __len__(self) -> int:
        return self.total

    def __bool__(self) -> bool:
        return True


# A response ready to send: plain bytes and file regions, in wire order.
ResponseChunks = list[bytes | FileRegion]


class _ChunkWriter:
    """A ``Writable`` for kio that collects bytes and splices in file regions."""

    __slots__ = ("chunks", "current", "size")

    def __init__(self) -> None:
        self.chunks: ResponseChunks = []
        self.current = bytearray()
        self.size = 0

    def write(self, data: bytes) -> int:
        if type(data) is RecordsRegion:
            if self.current:
                self.chunks.append(bytes(self.current))
                self.current = bytearray()
            self.chunks.extend(data.regions)
            self.size += data.total
            return data.total
        self.current += data
        self.size += len(data)
        return len(data)

    def finish(self) -> ResponseChunks:
        if self.current:
            self.chunks.append(bytes(self.current))
            self.current = bytearray()
        return self.chunks


@cache
def _request_readers(api_key: int, api_version: int) -> tuple[Any, Any]:
    body_type = load_request_schema(api_key, api_version)
    header_type = body_type.__header_schema__
    return entity_reader(header_type), entity_reader(body_type)


@cache
def _response_writers(api_key: int, api_version: int) -> tuple[Any, Any, Any]:
    body_type = load_response_schema(api_key, api_version)
    header_type = body_type.__header_schema__
    return header_type, entity_writer(header_type), entity_writer(body_type)


def decode_request(frame: bytes | bytearray, supported: dict[int, tuple[int, int]]) -> Request:
    """Decode one frame into a ``Request``.

    ``supported`` maps API keys to the inclusive version range Weir implements. Raises
    ``UnsupportedVersionError`` for a version outside it and ``ProtocolError`` for anything
    unparseable or an unknown API key.
    """
    if len(frame) < _KEY_VERSION.size:
        raise ProtocolError(f"request of {len(frame)} bytes is shorter than a header")
    api_key, api_version, correlation_id = _KEY_VERSION.unpack_from(frame, 0)
    versions = supported.get(api_key)
    if versions is None:
        raise ProtocolError(f"unknown API key {api_key}")
    if not versions[0] <= api_version <= versions[1]:
        raise UnsupportedVersionError(api_key, api_version, correlation_id)
    header_reader, body_reader = _request_readers(api_key, api_version)
    view = memoryview(frame)
    try:
        # kio's native readers refuse writable buffers; a read-only view costs no copy.
        header, offset = header_reader(view.toreadonly(), 0)
        if api_key == ApiKey.PRODUCE:
            body = read_produce_request(view, offset, api_version)
        else:
            body, _ = body_reader(view.toreadonly(), offset)
    except Exception as exc:  # kio raises several types for malformed input
        raise ProtocolError(
            f"malformed request (API {api_key} v{api_version}, correlation id "
            f"{correlation_id}): {exc}"
        ) from exc
    # Trailing bytes are tolerated, as Kafka's own request parsing does: librdkafka 2.16,
    # for one, pads some Metadata v12 requests with bytes the schema does not have.
    return Request(
        api_key=api_key,
        api_version=api_version,
        correlation_id=correlation_id,
        client_id=header.client_id,
        body=body,
        size=len(frame),
    )


def encode_response(
    api_key: int, api_version: int, correlation_id: int, body: Any
) -> ResponseChunks:
    """Serialize a response body with its header, prefixed by the frame size."""
    header_type, header_writer, body_writer = _response_writers(api_key, api_version)
    writer = _ChunkWriter()
    writer.write(b"\x00\x00\x00\x00")  # size placeholder, patched below
    header_writer(writer, header_type(correlation_id=correlation_id))
    body_writer(writer, body)
    chunks = writer.finish()
    first = chunks[0]
    assert isinstance(first, bytes)
    chunks[0] = _SIZE.pack(writer.size - 4) + first[4:]
    return chunks


def encode_unsupported_api_versions(
    correlation_id: int, supported: dict[int, tuple[int, int]]
) -> bytes:
    """ApiVersions v0 response with UNSUPPORTED_VERSION and the full supported table."""
    body = ApiVersionsResponseV0(
        error_code=ErrorCode.unsupported_version,
        api_keys=tuple(
            ApiVersionV0(api_key=key, min_version=low, max_version=high)
            for key, (low, high) in sorted(supported.items())
        ),
    )
    chunks = encode_response(API_VERSIONS_KEY, 0, correlation_id, body)
    return b"".join(c for c in chunks if isinstance(c, bytes))
