"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-219): which quota applies, the measured rate,
and how long a client that exceeds it is throttled. Pure logic: every method takes ``now_ms``.

Theory of operation
-------------------
**Entities.** A quota is set on an entity made of a ``user`` and/or a ``client-id`` part; a
part is a name or ``<default>`` (``None`` here, null on the wire). Three keys are quotas:
``producer_byte_rate`` and ``consumer_byte_rate`` (bytes per second) and
``request_percentage`` (percent of one request-handling thread per second).
``controller_mutation_rate`` (KIP-599) is not implemented and is refused by name.

**Which quota.** For a request of user U and client id C, per quota key, the first of Kafka's
eight levels that sets the key wins (``DefaultQuotaCallback``)::

    1 /config/users/U/clients/C          5 /config/users/<default>/clients/<default>
    2 /config/users/U/clients/<default>  6 /config/users/<default>
    3 /config/users/U                    7 /config/clients/C
    4 /config/users/<default>/clients/C  8 /config/clients/<default>

The level also gives the *metric tags* ``(user, client-id)`` under which usage is counted:
(U, C) for levels 1, 2, 4, 5; (U, "") for 3 and 6; ("", C) for 7 and 8. Every connection
with the same tags shares one rate, so a quota on ``users/alice`` bounds all of alice's
clients together, and a ``clients/<default>`` quota gives each client id its own budget.

**The rate.** Kafka's ``Rate`` over a ``SampledStat``: ``quota.window.num`` samples of
``quota.window.size.seconds`` each. A sample older than num * size is reset; the rate is the
sum of the samples divided by the elapsed time since the oldest sample started, counted as at
least num - 1 whole windows (so a client that just started is not judged over a few
milliseconds).

**Throttle time.** After recording a value, if the rate O exceeds the bound T, the delay that
brings O back to T over the window W is X = (O - T) / T * W (``QuotaUtils.throttleTime``);
the request quota caps X at one window, byte-rate quotas do not. The broker sends the response
at once with ``throttle_time_ms`` = X and mutes the connection for X (KIP-219): the next
request of that connection is not read until then (``weir.server``). A throttled Fetch is
answered empty and its bytes are taken back (Kafka's ``unrecordQuotaSensor``); a fetch is
never asked for more than the quota allows in the whole window
(``max_value_in_window``).

Usage sensors that see no request for an hour are dropped (Kafka's inactive sensor
expiration), so memory follows the active clients. ``snapshot`` gives the per-entity figures
the broker publishes with its metrics (``weir.metrics``).
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "CLIENT_ID",
    "QUOTA_KEYS",
    "USER",
    "InvalidQuotaError",
    "QuotaEntity",
    "QuotaKind",
    "QuotaManager",
    "RequestTimer",
    "current_request_timer",
    "describe_matching",
    "not_request_time",
    "validate_alteration",
]

USER = "user"
CLIENT_ID = "client-id"
ENTITY_TYPES = (USER, CLIENT_ID)
# Kafka's QuotaConfigs, as AlterClientQuotas and kafka-configs name them.
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)
# Kafka drops a quota sensor nobody recorded into for this long.
INACTIVE_SENSOR_EXPIRATION_MS = 3_600_000


class QuotaKind(StrEnum):
    """Kafka's QuotaType, named as its metric groups (``type=Produce`` ...)."""

    PRODUCE = "Produce"
    FETCH = "Fetch"
    REQUEST = "Request"


_KEY_OF = {
    QuotaKind.PRODUCE: PRODUCER_BYTE_RATE,
    QuotaKind.FETCH: CONSUMER_BYTE_RATE,
    QuotaKind.REQUEST: REQUEST_PERCENTAGE,
}


class InvalidQuotaError(ValueError):
    """An alteration or filter Kafka refuses with INVALID_REQUEST."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """A quota entity: (entity type, name) pairs sorted by type; a None name is ``<default>``."""

    components: tuple[tuple[str, str | None], ...]

    @classmethod
    def of(
        cls, *, user: str | bool | None = False, client_id: str | bool | None = False
    ) -> QuotaEntity:
        """An entity from its parts: a name, None for ``<default>``, False for absent."""
        parts = [(USER, user), (CLIENT_ID, client_id)]
        return cls(tuple(sorted((t, n) for t, n in parts if n is not False)))  # type: ignore[misc]

    def part(self, entity_type: str) -> str | bool | None:
        """The name of a part, None for ``<default>``, False when the entity has no such part."""
        for kind, name in self.components:
            if kind == entity_type:
                return name
        return False

    def to_key(self) -> str:
        """Canonical JSON, the field name in the Redis hash ``client_quotas``."""
        return json.dumps([list(c) for c in self.components], separators=(",", ":"))

    @classmethod
    def from_key(cls, key: str | bytes) -> QuotaEntity:
        return cls(tuple(sorted((str(t), n) for t, n in json.loads(key))))

    def __str__(self) -> str:
        """Kafka's path form, e.g. ``users/alice/clients/<default>``."""
        names = {USER: "users", CLIENT_ID: "clients"}
        order = sorted(self.components, key=lambda c: ENTITY_TYPES.index(c[0]))
        return "/".join(f"{names[t]}/{'<default>' if n is None else n}" for t, n in order)


def validate_alteration(
    entity: QuotaEntity, ops: list[tuple[str, float, bool]]
) -> dict[str, float | None]:
    """Kafka's checks on one AlterClientQuotas entry (``ClientQuotaControlManager``): the
    changes as key → value (None removes). Raises InvalidQuotaError (INVALID_REQUEST, as
    Kafka answers every one of them) with Kafka's message."""
    types = [t for t, _ in entity.components]
    if not types:
        raise InvalidQuotaError("Invalid empty client quota entity")
    for entity_type, name in entity.components:
        if entity_type == "ip":
            raise InvalidQuotaError("IP connection-rate quotas (entity type ip) are not supported")
        if entity_type not in ENTITY_TYPES:
            raise InvalidQuotaError(f"Unhandled client quota entity type: {entity_type}")
        if name == "":
            raise InvalidQuotaError(f"Empty {entity_type} not supported")
    if len(set(types)) != len(types):
        raise InvalidQuotaError("Duplicate entity type in client quota entity")
    changes: dict[str, float | None] = {}
    for key, value, remove in ops:
        if key in changes:
            raise InvalidQuotaError(f"Duplicate quota key {key} not updating quota")
        if key == CONTROLLER_MUTATION_RATE:
            raise InvalidQuotaError(
                f"{CONTROLLER_MUTATION_RATE} is not supported (controller mutation quotas, "
                "KIP-599, are not implemented)"
            )
        if key not in QUOTA_KEYS:
            raise InvalidQuotaError(f"Invalid configuration key {key}")
        if remove:
            changes[key] = None
            continue
        if math.isnan(value) or math.isinf(value) or value <= 0:
            # Kafka stores any double; a quota of zero or less would throttle every request
            # forever, so it is refused here.
            raise InvalidQuotaError(f"Configuration {key} must be a positive value, got {value}")
        if key != REQUEST_PERCENTAGE and abs(int(value + 1e-6) - value) > 1e-6:
            raise InvalidQuotaError(f"Configuration {key} must be a Long value")
        changes[key] = value
    return changes


MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def describe_matching(
    quotas: Mapping[QuotaEntity, Mapping[str, float]],
    components: list[tuple[str, int, str | None]],
    *,
    strict: bool,
) -> list[tuple[QuotaEntity, Mapping[str, float]]]:
    """The entities a DescribeClientQuotas filter matches, sorted, with their quotas.

    A component ``(entity type, match type, match)`` matches a name (EXACT), the
    ``<default>`` entity (DEFAULT, or EXACT with a null match) or any name (SPECIFIED).
    Every component must match; with ``strict`` the entity may have no other part.
    Raises InvalidQuotaError with Kafka's message for a bad filter.
    """
    seen: set[str] = set()
    for entity_type, match_type, _ in components:
        if entity_type == "":
            raise InvalidQuotaError("Unexpected empty filter component entity type")
        if entity_type == "ip":
            raise InvalidQuotaError("IP connection-rate quotas (entity type ip) are not supported")
        if entity_type not in ENTITY_TYPES:
            raise InvalidQuotaError(f"Custom entity type {entity_type} not supported")
        if entity_type in seen:
            label = "user" if entity_type == USER else "client id"
            raise InvalidQuotaError(f"Duplicate {label} filter component entity type")
        if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            raise InvalidQuotaError(f"Unknown match type {match_type}")
        seen.add(entity_type)

    def matches(entity: QuotaEntity) -> bool:
        for entity_type, match_type, match in components:
            name = entity.part(entity_type)
            if name is False:
                return False
            if match_type == MATCH_SPECIFIED:
                if name is None:
                    return False
            elif match_type == MATCH_DEFAULT or match is None:
                if name is not None:
                    return False
            elif name != match:
                return False
        return not strict or len(entity.components) == len(components)

    ordered = sorted(quotas.items(), key=lambda item: item[0].to_key())
    return [(e, v) for e, v in ordered if v and matches(e)]


# -- request time -----------------------------------------------------------------------------
# Time a handler spends waiting (a parked Fetch, acks=all in the purgatory, a JoinGroup
# waiting for the rebalance) is not request time: Kafka counts only time on its request and
# network threads, and a long poll uses none.
_timer: ContextVar[RequestTimer | None] = ContextVar("weir_quota_request_timer", default=None)


@contextlib.contextmanager
def not_request_time() -> Iterator[None]:
    """Mark a wait inside a handler: it is left out of the request's time."""
    timer = _timer.get()
    if timer is None:
        yield
        return
    started = time.perf_counter_ns()
    try:
        yield
    finally:
        timer.waited_ns += time.perf_counter_ns() - started


def current_request_timer() -> RequestTimer | None:
    """The timer of the request being handled, when the request quota times it."""
    return _timer.get()


class RequestTimer:
    """Times one request's handling, minus its ``not_request_time`` waits.

    ``charged`` is set by whoever records the time: normally the request-quota wrapper after
    the handler returns; a Fetch records it itself before it answers, because the request
    quota's throttle decides whether the response carries data (Kafka's handleFetchRequest).
    """

    __slots__ = ("_started", "_token", "charged", "waited_ns")

    def __enter__(self) -> RequestTimer:
        self.waited_ns = 0
        self.charged = False
        self._token = _timer.set(self)
        self._started = time.perf_counter_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        _timer.reset(self._token)

    def elapsed_ns(self) -> int:
        return max(0, time.perf_counter_ns() - self._started - self.waited_ns)


# -- sampled stats ----------------------------------------------------------------------------
class _SampledStat:
    """Kafka's SampledStat with the combinations quotas need: sum (for Rate), count and max.

    Samples are ``[window start ms, sum, count, max]``; ``current`` indexes the newest.
    """

    __slots__ = ("current", "samples")

    def __init__(self) -> None:
        self.samples: list[list[float]] = []
        self.current = 0

    def record(self, value: float, now_ms: int, num: int, window_ms: int) -> None:
        if not self.samples:
            self.samples.append([now_ms, 0.0, 0, -math.inf])
        sample = self.samples[self.current]
        if now_ms - sample[0] >= window_ms:
            self.current = (self.current + 1) % num
            if self.current >= len(self.samples):
                sample = [now_ms, 0.0, 0, -math.inf]
                self.samples.append(sample)
            else:
                sample = self.samples[self.current]
                sample[:] = [now_ms, 0.0, 0, -math.inf]
        sample[1] += value
        sample[2] += 1
        sample[3] = max(sample[3], value)

    def _purge(self, now_ms: int, num: int, window_ms: int) -> None:
        expire = num * window_ms
        for sample in self.samples:
            if now_ms - sample[0] >= expire:
                sample[:] = [now_ms, 0.0, 0, -math.inf]

    def totals(self, now_ms: int, num: int, window_ms: int) -> tuple[float, int, float]:
        """(sum, count, max) over the live samples."""
        self._purge(now_ms, num, window_ms)
        total = sum(s[1] for s in self.samples)
        count = int(sum(s[2] for s in self.samples))
        peak = max((s[3] for s in self.samples), default=-math.inf)
        return total, count, peak

    def window_ms(self, now_ms: int, num: int, window_ms: int) -> int:
        """Kafka's ``Rate.windowSize``: time since the oldest sample, at least num - 1 windows."""
        self._purge(now_ms, num, window_ms)
        if not self.samples:
            self.samples.append([now_ms, 0.0, 0, -math.inf])
        elapsed = now_ms - min(s[0] for s in self.samples)
        full = elapsed // window_ms
        if full < num - 1:
            elapsed += (num - 1 - full) * window_ms
        return int(max(elapsed, 1))

    def rate(self, now_ms: int, num: int, window_ms: int) -> float:
        """Per second."""
        total, _, _ = self.totals(now_ms, num, window_ms)
        return total / (self.window_ms(now_ms, num, window_ms) / 1000)


@dataclass(slots=True)
class _Sensor:
    """Usage of one quota kind under one metric tag pair, and the throttling it caused."""

    usage: _SampledStat = field(default_factory=_SampledStat)
    throttle: _SampledStat = field(default_factory=_SampledStat)
    bound: float | None = None
    last_record_ms: int = 0
    throttled_requests: int = 0
    throttle_ms_total: int = 0


@dataclass(frozen=True, slots=True)
class _Applied:
    """The quota a request falls under: its metric tags and bound (None: unlimited)."""

    user: str
    client_id: str
    bound: float | None


_UNLIMITED = _Applied("", "", None)


class QuotaManager:
    """Client quotas of one broker: configured bounds (from the metadata image), usage per
    metric tags, throttle times. ``window_num``/``window_size_s`` are Kafka's
    ``quota.window.num`` and ``quota.window.size.seconds`` (read-only broker configs)."""

    def __init__(self, *, window_num: int = 11, window_size_s: int = 1) -> None:
        self.window_num = window_num
        self.window_ms = window_size_s * 1000
        self._quotas: Mapping[QuotaEntity, Mapping[str, float]] = {}
        # Which kinds have any quota at all: without one, a request costs one set lookup.
        self._enabled: frozenset[QuotaKind] = frozenset()
        self._applied: dict[tuple[QuotaKind, str, str], _Applied] = {}
        self._sensors: dict[tuple[QuotaKind, str, str], _Sensor] = {}
        self._last_expiry_ms = 0

    # -- configuration ---------------------------------------------------------------------
    def update(self, quotas: Mapping[QuotaEntity, Mapping[str, float]]) -> None:
        """Take the quotas of a new metadata image (cheap when they did not change)."""
        if quotas is self._quotas or quotas == self._quotas:
            return
        self._quotas = quotas
        self._applied.clear()
        self._enabled = frozenset(
            kind for kind, key in _KEY_OF.items() if any(key in v for v in quotas.values())
        )

    def enabled(self, kind: QuotaKind) -> bool:
        return kind in self._enabled

    def applied(self, kind: QuotaKind, user: str, client_id: str) -> _Applied:
        """The most specific quota for this user and client id, with its metric tags."""
        cache_key = (kind, user, client_id)
        found = self._applied.get(cache_key)
        if found is None:
            found = self._applied[cache_key] = self._lookup(_KEY_OF[kind], user, client_id)
        return found

    def _lookup(self, key: str, user: str, client_id: str) -> _Applied:
        u, c = user, client_id
        levels: tuple[tuple[QuotaEntity, str, str], ...] = (
            (QuotaEntity.of(user=u, client_id=c), u, c),
            (QuotaEntity.of(user=u, client_id=None), u, c),
            (QuotaEntity.of(user=u), u, ""),
            (QuotaEntity.of(user=None, client_id=c), u, c),
            (QuotaEntity.of(user=None, client_id=None), u, c),
            (QuotaEntity.of(user=None), u, ""),
            (QuotaEntity.of(client_id=c), "", c),
            (QuotaEntity.of(client_id=None), "", c),
        )
        for entity, tag_user, tag_client in levels:
            value = self._quotas.get(entity, {}).get(key)
            if value is not None:
                return _Applied(tag_user, tag_client, float(value))
        return _UNLIMITED

    # -- recording ---------------------------------------------------------------------------
    def record(self, kind: QuotaKind, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record ``value`` (bytes, or percent-seconds of a thread for REQUEST); the throttle
        time in ms (0 within the quota)."""
        if kind not in self._enabled:
            return 0
        applied = self.applied(kind, user, client_id)
        if applied.bound is None:
            return 0
        sensor = self._sensor(kind, applied, now_ms)
        num, window = self.window_num, self.window_ms
        sensor.usage.record(value, now_ms, num, window)
        observed = sensor.usage.rate(now_ms, num, window)
        if observed <= applied.bound:
            return 0
        throttle = (observed - applied.bound) / applied.bound
        throttle_ms = round(throttle * sensor.usage.window_ms(now_ms, num, window))
        if kind is QuotaKind.REQUEST:
            throttle_ms = min(throttle_ms, window)
        return int(throttle_ms)

    def unrecord(
        self, kind: QuotaKind, user: str, client_id: str, value: float, now_ms: int
    ) -> None:
        """Take back a recorded value (a throttled Fetch is answered empty)."""
        applied = self.applied(kind, user, client_id)
        if kind in self._enabled and applied.bound is not None:
            sensor = self._sensor(kind, applied, now_ms)
            sensor.usage.record(-value, now_ms, self.window_num, self.window_ms)

    def throttled(
        self, kind: QuotaKind, user: str, client_id: str, throttle_ms: int, now_ms: int
    ) -> None:
        """Count a throttle the broker applied (Kafka's ``throttle-time`` sensor)."""
        applied = self.applied(kind, user, client_id)
        sensor = self._sensor(kind, applied, now_ms)
        sensor.throttle.record(throttle_ms, now_ms, self.window_num, self.window_ms)
        sensor.throttled_requests += 1
        sensor.throttle_ms_total += throttle_ms

    def max_value_in_window(self, kind: QuotaKind, user: str, client_id: str) -> float:
        """The most a single request may take: the bound over num - 1 windows (Kafka's
        ``getMaxValueInQuotaWindow``, which caps a consumer's fetch size); inf without one."""
        if kind not in self._enabled:
            return math.inf
        bound = self.applied(kind, user, client_id).bound
        if bound is None:
            return math.inf
        return bound * (self.window_num - 1) * self.window_ms / 1000

    def _sensor(self, kind: QuotaKind, applied: _Applied, now_ms: int) -> _Sensor:
        key = (kind, applied.user, applied.client_id)
        sensor = self._sensors.get(key)
        if sensor is None:
            sensor = self._sensors[key] = _Sensor()
        sensor.bound = applied.bound
        sensor.last_record_ms = now_ms
        return sensor

    # -- figures -----------------------------------------------------------------------------
    def snapshot(self, now_ms: int) -> list[dict[str, Any]]:
        """Per quota kind and metric tags: bound, measured rate, throttling (JSON-able).

        Also drops sensors idle for an hour. ``rate`` is bytes/s (Produce, Fetch) or percent of
        a thread (Request); ``throttle_time_avg_ms`` / ``throttle_time_max_ms`` cover the
        quota window, ``throttled_requests`` / ``throttle_time_ms_total`` count since start.
        """
        num, window = self.window_num, self.window_ms
        for key, sensor in list(self._sensors.items()):
            if now_ms - sensor.last_record_ms >= INACTIVE_SENSOR_EXPIRATION_MS:
                del self._sensors[key]
        out = []
        for (kind, user, client_id), sensor in sorted(self._sensors.items()):
            throttle_sum, throttle_count, throttle_max = sensor.throttle.totals(now_ms, num, window)
            out.append(
                {
                    "type": kind.value,
                    "user": user,
                    "client_id": client_id,
                    "quota": sensor.bound,
                    "rate": round(sensor.usage.rate(now_ms, num, window), 3),
                    "throttle_time_avg_ms": (
                        round(throttle_sum / throttle_count, 3) if throttle_count else 0.0
                    ),
                    "throttle_time_max_ms": max(throttle_max, 0.0),
                    "throttled_requests": sensor.throttled_requests,
                    "throttle_time_ms_total": sensor.throttle_ms_total,
                }
            )
        return out
