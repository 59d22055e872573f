"""A websocket that watches server-side state and pushes it only when it changes.

The monitor pushes cluster and lag messages on its own tick (``groups.consumers``). Other
live views (a topic's partition table, reassignment progress, a partition's tail) are only
worth computing while someone looks at them, so each connection runs its own small loop: it
calls :meth:`WatchConsumer.snapshot` (a selector, in a thread) every ``interval`` seconds and
sends the JSON when it differs from the last one sent. The browser never polls; the server
reads Redis (cheap) at the interval, and only for open pages.

A page-wide socket (no URL parameters, one message for everyone looking) is just a message
function: :func:`page_socket` routes a :class:`MessageConsumer` that sends it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import URLPattern, path

from controlplane.errors import ApiError
from controlplane.ws_auth import admit_viewer

__all__ = ["MessageConsumer", "WatchConsumer", "page_socket"]

log = logging.getLogger("weir.ws")


class WatchConsumer(AsyncWebsocketConsumer):
    """Authenticate, then send ``snapshot()`` whenever it changes (checked every ``interval``)."""

    interval = 1.0
    _task: asyncio.Task[None] | None = None

    def snapshot(self) -> dict[str, Any]:
        """The current view (runs in a worker thread; may use the ORM and the gateway)."""
        raise NotImplementedError

    @property
    def kwargs(self) -> dict[str, Any]:
        return self.scope["url_route"]["kwargs"]

    async def connect(self) -> None:
        if not await admit_viewer(self):
            return
        await self.accept()
        self._task = asyncio.create_task(self._watch())

    async def disconnect(self, code: int) -> None:
        if self._task is not None:
            self._task.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Clients only listen."""

    async def _watch(self) -> None:
        last = None
        while True:
            try:
                view = await database_sync_to_async(self.snapshot, thread_sensitive=False)()
                text = json.dumps(view, separators=(",", ":"), default=str)
            except ApiError as exc:
                text = json.dumps({"type": "error", "message": exc.message})
            except Exception:  # a failing read must not kill the socket; say so and go on
                log.warning("live view %s failed", type(self).__name__, exc_info=True)
                text = json.dumps({"type": "error", "message": "could not read cluster state"})
            if text != last:
                await self.send(text_data=text)
                last = text
            await asyncio.sleep(self.interval)


class MessageConsumer(WatchConsumer):
    """Sends ``message()`` whenever it changes: the socket of a page that shows one view."""

    def __init__(
        self, *args: Any, message: Callable[[], dict[str, Any]], interval: float, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.message = message
        self.interval = interval

    def snapshot(self) -> dict[str, Any]:
        return self.message()


def page_socket(
    route: str, message: Callable[[], dict[str, Any]], *, name: str, interval: float = 1.0
) -> URLPattern:
    """The route of a page-wide socket pushing ``message()`` (checked every ``interval``
    seconds); the page's first paint calls the same function."""
    consumer = MessageConsumer.as_asgi(message=message, interval=interval)
    return path(route, consumer, name=name)
