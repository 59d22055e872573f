"""Where the service reads the registry's state and writes its records.

The service (``weir.registry.service``) decides; a backend stores. Reads take the state as
it is now (:meth:`Backend.read`, a context manager that holds the state's lock). Writes are
transactions: :meth:`Backend.transact` runs ``decide(txn)`` on a state that is *current* —
nobody else can write until the transaction's records are stored — collects the records
``decide`` wrote into the :class:`Txn`, stores them, and returns what ``decide`` returned
once this process's state includes them (read-your-writes). ``decide`` may raise
:class:`~weir.registry.errors.RegistryError`; nothing is written then.

Two backends: :class:`LocalBackend` keeps the state in this process only (tests of the
service's rules, a one-process registry); ``weir.registry.store.KafkaStore`` keeps it in
the cluster's ``_schemas`` topic, shared by any number of processes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol, TypeVar

from weir.registry.records import Record, SchemaRecord
from weir.registry.state import RegistryState

__all__ = ["Backend", "LocalBackend", "Txn"]

T = TypeVar("T")


class Txn:
    """One write transaction: the current state, new ids, and the records to store."""

    def __init__(self, state: RegistryState, id_floor: int = 0) -> None:
        self.state = state
        self.records: list[Record] = []
        # Ids at or below the floor were handed out once, even if no record shows them now.
        self._last_id = max(state.max_id, id_floor)

    def new_id(self) -> int:
        """A schema id never handed out before."""
        self._last_id += 1
        return self._last_id

    def write(self, record: Record) -> None:
        self.records.append(record)

    @property
    def max_id(self) -> int:
        """The highest id this transaction's records carry (0 when none)."""
        ids = [r.schema_id for r in self.records if isinstance(r, SchemaRecord)]
        return max(ids, default=0)


class Backend(Protocol):
    """What the service needs from storage."""

    def read(self) -> AbstractContextManager[RegistryState]:
        """The state as this process knows it now, locked for the ``with`` block."""
        ...

    def transact(self, decide: Callable[[Txn], T]) -> T:
        """Run ``decide`` on the current state and store the records it wrote."""
        ...


class LocalBackend:
    """A registry held in this process's memory: the state, a lock, nothing shared."""

    def __init__(self) -> None:
        self.state = RegistryState()
        self._lock = threading.RLock()

    @contextmanager
    def read(self) -> Iterator[RegistryState]:
        with self._lock:
            yield self.state

    def transact(self, decide: Callable[[Txn], T]) -> T:
        with self._lock:
            txn = Txn(self.state)
            result = decide(txn)
            for record in txn.records:
                self.state.apply(record)
            return result
