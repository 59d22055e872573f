"""Topic ACL sync (``sync.topic.acls.enabled``): MM2's rule, so remote topics stay read-only.

Every ``sync.topic.acls.interval.seconds`` MM2's ``MirrorSourceConnector`` lists the source's
ACL bindings on topics and recreates, on the target, those of the topics the flow mirrors,
renamed to the remote topic. Its rule, kept here:

- only ``LITERAL`` topic patterns (a prefixed or wildcard pattern names no one topic to
  rename);
- ``ALLOW WRITE`` is never copied: only the mirror writes to a remote topic;
- ``ALLOW ALL`` becomes ``ALLOW READ`` for the same reason; every other entry (``DENY``
  anything, ``ALLOW READ``/``DESCRIBE``...) is copied as it is.

Bindings are only ever added (``create_acls`` is idempotent), never deleted on the target, as
in MM2. A Kafka source without an authorizer answers ``SECURITY_DISABLED``: there is nothing
to sync, and the step says so once rather than failing every interval. (A Weir source keeps
ACLs even without an authorizer, so it simply answers with the ones it has.)

``plan_acls`` is pure (tests drive it with plain tuples); ``sync_acls`` is the executor over
confluent-kafka's ``AdminClient``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

__all__ = ["AclEntry", "AclSyncError", "plan_acls", "sync_acls"]

_TIMEOUT_S = 15.0


class AclSyncError(RuntimeError):
    """Listing the source's ACLs or creating them on the target failed."""


@dataclass(frozen=True, slots=True)
class AclEntry:
    """A literal topic ACL binding, in names (``operation`` as Kafka spells it: READ, ALL...)."""

    topic: str
    principal: str
    host: str
    operation: str
    permission: str  # ALLOW or DENY


def plan_acls(source: Iterable[AclEntry], remote_names: Mapping[str, str]) -> list[AclEntry]:
    """The bindings to create on the target for the mirrored topics ``remote_names``
    (source topic -> target topic), by MM2's rule (module docstring)."""
    out = []
    for entry in source:
        remote = remote_names.get(entry.topic)
        if remote is None:
            continue
        if entry.permission == "ALLOW" and entry.operation == "WRITE":
            continue
        operation = "READ" if entry.permission == "ALLOW" and entry.operation == "ALL" else None
        out.append(
            AclEntry(
                remote, entry.principal, entry.host, operation or entry.operation, entry.permission
            )
        )
    return sorted(set(out), key=lambda e: (e.topic, e.principal, e.host, e.operation))


def sync_acls(
    source_admin: Any, target_admin: Any, remote_names: Mapping[str, str], *, cluster: str
) -> list[AclEntry] | None:
    """Copy the source's topic ACLs for ``remote_names`` to the target; the bindings sent, or
    None when the source has no authorizer (nothing to sync)."""
    any_topic = AclBindingFilter(
        ResourceType.TOPIC,
        None,
        ResourcePatternType.LITERAL,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    try:
        bindings = source_admin.describe_acls(any_topic).result(_TIMEOUT_S)
    except Exception as exc:
        error = exc.args[0] if exc.args else None
        if getattr(error, "name", lambda: "")() == "SECURITY_DISABLED":
            return None
        raise AclSyncError(f"listing topic ACLs failed: {exc}") from exc
    source = [
        AclEntry(
            b.name,
            b.principal,
            b.host,
            b.operation.name,
            b.permission_type.name,
        )
        for b in bindings
        if b.restype == ResourceType.TOPIC
        and b.resource_pattern_type == ResourcePatternType.LITERAL
    ]
    planned = plan_acls(source, remote_names)
    if not planned:
        return planned
    new = [
        AclBinding(
            ResourceType.TOPIC,
            e.topic,
            ResourcePatternType.LITERAL,
            e.principal,
            e.host,
            AclOperation[e.operation],
            AclPermissionType[e.permission],
        )
        for e in planned
    ]
    errors = []
    for binding, future in target_admin.create_acls(new).items():
        try:
            future.result(_TIMEOUT_S)
        except Exception as exc:
            errors.append(f"{binding.name} {binding.principal} {binding.operation.name}: {exc}")
    if errors:
        raise AclSyncError(f"{cluster}: create_acls failed: " + "; ".join(errors))
    return planned
