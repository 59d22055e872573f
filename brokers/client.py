"""A minimal asyncio Kafka client for broker-to-broker requests.

Brokers talk to each other over the Kafka protocol, as Kafka's do: a broker that must
auto-create a topic sends CreateTopics to the controller (Kafka's AutoTopicCreationManager),
and followers will fetch from leaders the same way. One request at a time per connection;
requests are encoded with the same kio schemas the server decodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import struct
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer

__all__ = ["BrokerClient", "BrokerClientError"]

_SIZE = struct.Struct(">i")


class BrokerClientError(Exception):
    """The peer broker could not be reached or answered garbage."""


class BrokerClient:
    """A connection to one broker, opened on first use and reopened after failures."""

    def __init__(self, host: str, port: int, *, client_id: str) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation = 0
        self._lock = asyncio.Lock()

    async def request(self, body: Any, *, timeout: float = 30.0) -> Any:
        """Send ``body`` (a kio request entity) and return the decoded response body."""
        async with self._lock:
            try:
                async with asyncio.timeout(timeout):
                    return await self._roundtrip(body)
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
                await self.close()
                raise BrokerClientError(
                    f"request to broker {self.host}:{self.port} failed: {exc!r}"
                ) from exc

    async def _roundtrip(self, body: Any) -> Any:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        assert self._reader is not None
        self._correlation += 1
        api_key = body.__api_key__
        version = body.__version__
        header_type = body.__header_schema__
        buffer = io.BytesIO()
        buffer.write(b"\x00\x00\x00\x00")
        entity_writer(header_type)(
            buffer,
            header_type(
                request_api_key=api_key,
                request_api_version=version,
                correlation_id=self._correlation,
                client_id=self.client_id,
            ),
        )
        entity_writer(type(body))(buffer, body)
        frame = buffer.getbuffer()
        _SIZE.pack_into(frame, 0, len(frame) - 4)
        self._writer.write(bytes(frame))
        await self._writer.drain()
        (size,) = _SIZE.unpack(await self._reader.readexactly(4))
        payload = await self._reader.readexactly(size)
        response_type = load_response_schema(api_key, version)
        response_header_type = response_type.__header_schema__
        header, offset = entity_reader(response_header_type)(payload, 0)
        if header.correlation_id != self._correlation:
            raise BrokerClientError(
                f"correlation id {header.correlation_id} != {self._correlation}"
            )
        response, _ = entity_reader(response_type)(payload, offset)
        return response

    async def close(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
