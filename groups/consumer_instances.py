"""REST Proxy v2 consumer instances, living in the web process as Confluent's do.

Each instance wraps one confluent-kafka ``Consumer`` in a group. Requests for an instance
may arrive on several threads at once (Django runs sync views in a thread pool), and a
librdkafka consumer must not be used concurrently, so every instance has its own lock.
An instance that sees no request for ``WEIR_CONSUMER_INSTANCE_TIMEOUT_MS`` is closed (it
leaves its group): lazily when it is looked up, and by a reaper thread; all are closed when
the process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer
from django.conf import settings

from controlplane.cluster import gateway
from controlplane.errors import ApiError, NotFound

__all__ = ["ConsumerInstance", "registry"]

FORMATS = ("json", "binary", "avro", "jsonschema", "protobuf")


@dataclass
class ConsumerInstance:
    group: str
    name: str
    format: str
    consumer: Consumer
    auto_commit: bool
    # The longest a records read waits (Confluent's consumer.request.timeout.ms).
    request_timeout_ms: int = 1000
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)
    subscription: list[str] = field(default_factory=list)
    pattern: str | None = None
    assignment: list[tuple[str, int]] = field(default_factory=list)
    # (topic, partition) -> next offset to read (last consumed + 1), for commits with no body.
    consumed: dict[tuple[str, int], int] = field(default_factory=dict)


class InstanceRegistry:
    """Every consumer instance of this process, by (group, name)."""

    def __init__(self) -> None:
        self._instances: dict[tuple[str, str], ConsumerInstance] = {}
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None

    def _timeout_s(self) -> float:
        return settings.WEIR_CONSUMER_INSTANCE_TIMEOUT_MS / 1000

    def create(
        self,
        *,
        group: str,
        name: str,
        fmt: str,
        config: dict[str, Any],
        request_timeout_ms: int = 1000,
    ) -> ConsumerInstance:
        if not group.strip():
            # librdkafka takes a blank group.id for none and then aborts the whole process
            # (an assertion in confluent-kafka's Consumer_init): refuse it here.
            raise ApiError("consumer group id must not be blank", error_code=42201, status_code=422)
        with self._lock:
            self._expire_locked()
            if (group, name) in self._instances:
                raise ApiError(
                    f"Consumer with specified consumer ID {name!r} already exists in group "
                    f"{group!r}",
                    error_code=40902,
                    status_code=409,
                )
            auto_commit = str(config.get("auto.commit.enable", "false")).lower() == "true"
            consumer = Consumer(
                gateway().client_config(
                    **{
                        "group.id": group,
                        "client.id": f"weir-rest-{name}",
                        "auto.offset.reset": config.get("auto.offset.reset", "latest"),
                        "enable.auto.commit": auto_commit,
                        # Auto-commit commits only what a read returned (stored by the view),
                        # never records librdkafka fetched that a read left for the next one.
                        "enable.auto.offset.store": False,
                        "fetch.min.bytes": int(config.get("fetch.min.bytes", 1)),
                        "enable.partition.eof": False,
                    }
                )
            )
            instance = ConsumerInstance(
                group=group,
                name=name,
                format=fmt,
                consumer=consumer,
                auto_commit=auto_commit,
                request_timeout_ms=request_timeout_ms,
            )
            self._instances[(group, name)] = instance
            self._start_reaper()
            return instance

    @contextmanager
    def use(self, *, group: str, name: str) -> Iterator[ConsumerInstance]:
        """The instance, locked for this request; NotFound (40403) if it does not exist."""
        with self._lock:
            self._expire_locked()
            instance = self._instances.get((group, name))
        if instance is None:
            raise NotFound("Consumer instance not found.", error_code=40403)
        with instance.lock:
            instance.last_used = time.monotonic()
            yield instance
            instance.last_used = time.monotonic()

    def delete(self, *, group: str, name: str) -> None:
        with self._lock:
            instance = self._instances.pop((group, name), None)
        if instance is None:
            raise NotFound("Consumer instance not found.", error_code=40403)
        with instance.lock:
            instance.consumer.close()

    def _expire_locked(self) -> None:
        cutoff = time.monotonic() - self._timeout_s()
        for key, instance in list(self._instances.items()):
            if instance.last_used < cutoff and not instance.lock.locked():
                del self._instances[key]
                threading.Thread(target=instance.consumer.close, daemon=True).start()

    def expire(self) -> None:
        with self._lock:
            self._expire_locked()

    def names(self) -> list[tuple[str, str]]:
        with self._lock:
            return sorted(self._instances)

    def _start_reaper(self) -> None:
        if self._reaper is not None:
            return

        def reap() -> None:
            while True:
                time.sleep(min(5.0, max(0.2, self._timeout_s() / 4)))
                self.expire()

        self._reaper = threading.Thread(target=reap, name="weir-consumer-reaper", daemon=True)
        self._reaper.start()

    def close_all(self) -> None:
        with self._lock:
            instances = list(self._instances.values())
            self._instances.clear()
        for instance in instances:
            with contextlib.suppress(RuntimeError):  # already closed
                instance.consumer.close()


registry = InstanceRegistry()
atexit.register(registry.close_all)
