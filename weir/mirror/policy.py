"""MirrorMaker 2's replication policies: how mirrored topics are named, and loop prevention.

A replication policy answers two questions for a flow ``source->target``: what is the remote
(target-side) name of a source topic, and, given any topic name, which cluster did it come from
and what was it called there. Weir implements MM2's two built-in policies with MM2's exact
semantics (``org.apache.kafka.connect.mirror.DefaultReplicationPolicy`` and
``IdentityReplicationPolicy`` in ``connect/mirror-client``), so the names Weir writes are the
names MM2 and its tooling (``RemoteClusterUtils``) expect.

``DefaultReplicationPolicy`` prefixes the source alias: ``orders`` from ``east`` becomes
``east.orders`` (the separator is ``replication.policy.separator``, default ``.``). Parsing
splits at the separator as Java's ``String.split`` does, which drops trailing empty strings: a
name is remote when it has at least two non-trailing parts. The MM2 internal topics
(``mm2-offset-syncs.<cluster>.internal``, ``<cluster>.checkpoints.internal``) use the custom
separator too unless ``replication.policy.internal.topic.separator.enabled`` is false, in
which case they keep ``.``.

``IdentityReplicationPolicy`` keeps topic names unchanged (except heartbeats, which it still
prefixes so that heartbeats from different sources stay apart) and so cannot tell where a
topic came from: ``topic_source`` answers the flow's source alias for every non-heartbeat
topic. That is why MM2 cannot prevent loops under it, and why ``MirrorConfig`` refuses two
opposite flows that both use it.

Loop prevention (``is_cycle``) is MM2's ``MirrorSourceConnector.isCycle``: walk a topic's
upstream chain (``west.east.orders`` -> ``east.orders`` -> ``orders``) and refuse it if any
hop came from the flow's target cluster. So the ``east->west`` flow never mirrors
``west.orders`` back to ``west``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DEFAULT_POLICY",
    "IDENTITY_POLICY",
    "DefaultReplicationPolicy",
    "IdentityReplicationPolicy",
    "ReplicationPolicy",
    "came_from",
    "is_cycle",
]

DEFAULT_POLICY = "DefaultReplicationPolicy"
IDENTITY_POLICY = "IdentityReplicationPolicy"
_HEARTBEATS = "heartbeats"


@dataclass(frozen=True, slots=True)
class DefaultReplicationPolicy:
    """``<source><separator><topic>``: MM2's default policy."""

    separator: str = "."
    internal_topic_separator_enabled: bool = True

    def __post_init__(self) -> None:
        if not self.separator:
            raise ValueError("replication.policy.separator must not be empty")

    @property
    def name(self) -> str:
        """The short class name, as in ``replication.policy.class``."""
        return DEFAULT_POLICY

    # -- remote topic names ------------------------------------------------------------
    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        """The target-side name of ``topic`` mirrored from ``source_cluster_alias``."""
        return source_cluster_alias + self.separator + topic

    def topic_source(self, topic: str) -> str | None:
        """The alias of the cluster ``topic`` was mirrored from, or None for a local topic."""
        parts = topic.split(self.separator)
        while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
            parts.pop()
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        """The name ``topic`` had one hop upstream, or None for a local topic."""
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self.separator) :]

    def original_topic(self, topic: str) -> str:
        """The name at the origin of the whole chain (``b.a.orders`` -> ``orders``)."""
        while True:
            upstream = self.upstream_topic(topic)
            if upstream is None or upstream == topic:
                return topic
            topic = upstream

    # -- MM2's own topics --------------------------------------------------------------
    def _internal_separator(self) -> str:
        return self.separator if self.internal_topic_separator_enabled else "."

    def _internal_suffix(self) -> str:
        return self._internal_separator() + "internal"

    def _checkpoints_suffix(self) -> str:
        return self._internal_separator() + "checkpoints" + self._internal_suffix()

    def heartbeats_topic(self) -> str:
        """``heartbeats``."""
        return _HEARTBEATS

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """``mm2-offset-syncs.<cluster>.internal``."""
        sep = self._internal_separator()
        return "mm2-offset-syncs" + sep + cluster_alias + self._internal_suffix()

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """``<cluster>.checkpoints.internal``: checkpoints of groups on ``cluster_alias``."""
        return cluster_alias + self._checkpoints_suffix()

    def is_heartbeats_topic(self, topic: str) -> bool:
        """True for ``heartbeats`` and any mirror of it (``a.heartbeats``, ``b.a.heartbeats``)."""
        return self.original_topic(topic) == self.heartbeats_topic()

    def is_checkpoints_topic(self, topic: str) -> bool:
        """True for a checkpoints topic."""
        return topic.endswith(self._checkpoints_suffix())

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """True for MM2's own internal topics (offset syncs, checkpoints)."""
        return topic.endswith(self._internal_suffix())

    def is_internal_topic(self, topic: str) -> bool:
        """MM2's rule: its own topics, Kafka's (``__*``, ``.*``) and Connect's (``*-internal``,
        ``*.internal``). Internal topics are never mirrored, whatever the topic filter says."""
        return (
            self.is_mm2_internal_topic(topic)
            or topic.startswith(("__", "."))
            or topic.endswith(("-internal", ".internal"))
        )


@dataclass(frozen=True, slots=True)
class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Topic names unchanged (heartbeats excepted): MM2's ``IdentityReplicationPolicy``.

    ``source_cluster_alias`` is the flow's source, which MM2 hands the policy as
    ``source.cluster.alias``; without it ``topic_source`` of a non-heartbeat topic is None.
    """

    source_cluster_alias: str | None = None

    @property
    def name(self) -> str:
        """The short class name, as in ``replication.policy.class``."""
        return IDENTITY_POLICY

    def _looks_like_heartbeat(self, topic: str) -> bool:
        return topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        """``topic`` itself; heartbeats are still prefixed."""
        if self._looks_like_heartbeat(topic):
            return DefaultReplicationPolicy.format_remote_topic(self, source_cluster_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        """The configured source alias (heartbeats: parsed as the default policy does)."""
        if self._looks_like_heartbeat(topic):
            return DefaultReplicationPolicy.topic_source(self, topic)
        return self.source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        """``topic`` itself (heartbeats: parsed as the default policy does)."""
        if self._looks_like_heartbeat(topic):
            return DefaultReplicationPolicy.upstream_topic(self, topic)
        return topic


ReplicationPolicy = DefaultReplicationPolicy  # the common base, for type hints


def came_from(policy: ReplicationPolicy, topic: str, cluster_alias: str) -> bool:
    """Whether ``topic`` (or any hop of its upstream chain) was mirrored from ``cluster_alias``.

    MM2's ``isCycle`` with the flow's target as ``cluster_alias``: a topic that already came from
    the target must not be mirrored back to it. A policy whose ``upstream_topic`` returns the
    name unchanged (Identity) ends the walk, as in MM2.
    """
    seen: set[str] = set()
    while topic not in seen:
        seen.add(topic)
        source = policy.topic_source(topic)
        if source is None:
            return False
        if source == cluster_alias:
            return True
        upstream = policy.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return False
        topic = upstream
    return False


def is_cycle(policy: ReplicationPolicy, topic: str, *, target: str) -> bool:
    """Whether mirroring source topic ``topic`` to ``target`` would send it back home."""
    return came_from(policy, topic, target)
