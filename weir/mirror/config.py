"""The effective MirrorMaker 2 configuration: clusters, flows and their settings.

``MirrorConfig.from_properties(props, clusters=None)`` reads the key/value pairs of an MM2
``connect-mirror-maker.properties`` file (see ``properties``) and builds what the mirror runs,
with MM2's rules, taken from ``MirrorMakerConfig`` and the connector configs of Kafka's
``connect/mirror`` module:

- ``clusters`` (required) lists the aliases; every alias needs ``<alias>.bootstrap.servers``.
- Every ordered pair ``<src>-><dst>`` of distinct aliases is a flow. A flow replicates topics
  and emits checkpoints only when ``<src>-><dst>.enabled`` is ``true`` (MM2 defaults it to
  false); it still emits heartbeats into ``<dst>`` unless ``emit.heartbeats.enabled`` is false
  for it, because MM2 runs its heartbeat connector for every such pair.
- A flow's setting ``<key>`` comes from ``<src>-><dst>.<key>``, else the top-level ``<key>``,
  else MM2's default (the ``_*_DEFAULT`` constants below, copied from MM2's source).
- A ``*.interval.seconds`` is a positive number of seconds, or negative to disable the task
  as in MM2's ``Scheduler``; zero is refused (Java's scheduler would throw).
- ``--clusters A B`` (MM2's option) keeps only the flows whose *target* is one of them.
- A client of cluster ``<alias>`` in role ``producer``/``consumer``/``admin`` gets, key by key,
  ``<alias>.<role>.<key>``, else ``<alias>.<key>``, else the top-level ``<key>`` for MM2's client
  keys (``bootstrap.servers``, ``security.protocol``, ``ssl.*``, ``sasl.*``), translated to
  librdkafka by ``clients.to_librdkafka``.

Weir is stricter than MM2 where MM2's leniency hides mistakes: booleans must be ``true`` or
``false`` (Java's ``Boolean.parseBoolean`` reads any other word as false), the removed
``topics.blacklist``/``groups.blacklist`` aliases are refused rather than ignored (Kafka 4.0
dropped them, KAFKA-17529), and two opposite flows that both use
``IdentityReplicationPolicy`` are refused because nothing could stop them looping. Keys Weir
does not use (Connect worker settings, connector knobs it does not implement) are logged once,
not refused, as MM2 passes unknown keys through. Every error is a ``MirrorConfigError`` whose
message starts with the key.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from weir.mirror.clients import ClientConfigError, is_client_key, to_librdkafka
from weir.mirror.filters import (
    GROUPS_EXCLUDE_DEFAULT,
    GROUPS_INCLUDE_DEFAULT,
    TOPICS_EXCLUDE_DEFAULT,
    TOPICS_INCLUDE_DEFAULT,
    NameFilter,
    parse_list,
)
from weir.mirror.policy import (
    DEFAULT_POLICY,
    IDENTITY_POLICY,
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
)

__all__ = ["ClientRole", "Flow", "MirrorConfig", "MirrorConfigError"]

log = logging.getLogger("weir.mirror")

ClientRole = Literal["producer", "consumer", "admin"]
_ROLES: tuple[ClientRole, ...] = ("producer", "consumer", "admin")
_POLICY_PACKAGE = "org.apache.kafka.connect.mirror."

# Flow settings and MM2's defaults (MirrorSourceConfig, MirrorCheckpointConfig,
# MirrorHeartbeatConfig, MirrorConnectorConfig, MirrorClientConfig).
_BOOL_DEFAULTS = {
    "refresh.topics.enabled": True,
    "sync.topic.configs.enabled": True,
    "sync.topic.acls.enabled": True,
    "refresh.groups.enabled": True,
    "emit.checkpoints.enabled": True,
    "emit.heartbeats.enabled": True,
    "sync.group.offsets.enabled": False,
    "emit.offset-syncs.enabled": True,
    "heartbeats.replication.enabled": True,
    "replication.policy.internal.topic.separator.enabled": True,
}
_INTERVAL_DEFAULTS = {
    "refresh.topics.interval.seconds": 600,
    "sync.topic.configs.interval.seconds": 600,
    "sync.topic.acls.interval.seconds": 600,
    "refresh.groups.interval.seconds": 600,
    "emit.checkpoints.interval.seconds": 60,
    "emit.heartbeats.interval.seconds": 1,
    "sync.group.offsets.interval.seconds": 60,
}
_REPLICATION_FACTOR_DEFAULTS = {
    "replication.factor": 2,
    "offset-syncs.topic.replication.factor": 3,
    "checkpoints.topic.replication.factor": 3,
    "heartbeats.topic.replication.factor": 3,
}
_STRING_DEFAULTS = {
    "topics": TOPICS_INCLUDE_DEFAULT,
    "topics.exclude": TOPICS_EXCLUDE_DEFAULT,
    "groups": GROUPS_INCLUDE_DEFAULT,
    "groups.exclude": GROUPS_EXCLUDE_DEFAULT,
    "replication.policy.class": DEFAULT_POLICY,
    "replication.policy.separator": ".",
    "offset-syncs.topic.location": "source",
    "offset.lag.max": "100",
}
_FLOW_KEYS = frozenset(
    {"enabled"}
    | set(_BOOL_DEFAULTS)
    | set(_INTERVAL_DEFAULTS)
    | set(_REPLICATION_FACTOR_DEFAULTS)
    | set(_STRING_DEFAULTS)
)
_REMOVED = {
    "topics.blacklist": "topics.exclude",
    "groups.blacklist": "groups.exclude",
    "config.properties.blacklist": "config.properties.exclude",
}


class MirrorConfigError(ValueError):
    """An MM2 configuration Weir cannot run; the message starts with the offending key."""


@dataclass(frozen=True, slots=True)
class Flow:
    """One ``source->target`` pair and its effective settings. Intervals are in seconds;
    ``None`` means the task is disabled (``.enabled=false`` or a negative interval)."""

    source: str
    target: str
    enabled: bool
    topic_filter: NameFilter
    group_filter: NameFilter
    policy: DefaultReplicationPolicy
    refresh_topics_interval_s: int | None
    sync_topic_configs_interval_s: int | None
    sync_topic_acls_interval_s: int | None
    refresh_groups_interval_s: int | None
    emit_checkpoints_interval_s: int | None
    emit_heartbeats_interval_s: int | None
    sync_group_offsets_interval_s: int | None
    emit_offset_syncs_enabled: bool
    heartbeats_replication_enabled: bool
    offset_syncs_topic_location: Literal["source", "target"]
    offset_lag_max: int
    replication_factor: int
    offset_syncs_topic_replication_factor: int
    checkpoints_topic_replication_factor: int
    heartbeats_topic_replication_factor: int
    settings: Mapping[str, str] = field(repr=False)

    @property
    def name(self) -> str:
        """``source->target``, MM2's spelling."""
        return f"{self.source}->{self.target}"

    @property
    def offset_syncs_cluster(self) -> str:
        """The alias of the cluster that holds this flow's offset-syncs topic."""
        return self.source if self.offset_syncs_topic_location == "source" else self.target

    @property
    def offset_syncs_topic(self) -> str:
        """``mm2-offset-syncs.<other cluster>.internal``: named after the cluster it does not
        live on, as in MM2 (source-located: the target alias; target-located: the source)."""
        other = self.target if self.offset_syncs_topic_location == "source" else self.source
        return self.policy.offset_syncs_topic(other)

    @property
    def checkpoints_topic(self) -> str:
        """``<source>.checkpoints.internal`` on the target."""
        return self.policy.checkpoints_topic(self.source)


@dataclass(frozen=True, slots=True)
class MirrorConfig:
    """What ``mirror-maker`` runs: clusters, the flows it owns, and client settings."""

    clusters: tuple[str, ...]
    bootstrap_servers: Mapping[str, str]
    flows: tuple[Flow, ...]
    raw: Mapping[str, str] = field(repr=False)

    @property
    def replication_flows(self) -> tuple[Flow, ...]:
        """The flows that replicate topics and checkpoint groups (``.enabled=true``)."""
        return tuple(f for f in self.flows if f.enabled)

    def flow(self, source: str, target: str) -> Flow:
        """The flow ``source->target``; KeyError when this process does not run it."""
        for f in self.flows:
            if f.source == source and f.target == target:
                return f
        raise KeyError(f"{source}->{target}")

    def client_config(self, alias: str, role: ClientRole) -> dict[str, str]:
        """The confluent-kafka config of a ``role`` client of cluster ``alias``."""
        if alias not in self.clusters:
            raise MirrorConfigError(f"clusters: unknown cluster alias {alias!r}")
        if role not in _ROLES:
            raise ValueError(f"role must be one of {', '.join(_ROLES)}, not {role!r}")
        return _client_config(self.raw, alias, role)

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str], clusters: Iterable[str] | None = None
    ) -> MirrorConfig:
        """Validate an MM2 properties mapping; ``clusters`` is the ``--clusters`` option."""
        return _build(dict(props), None if clusters is None else tuple(clusters))


# -- building ------------------------------------------------------------------------------


def _parse_bool(key: str, value: str) -> bool:
    word = value.strip().lower()
    if word not in ("true", "false"):
        raise MirrorConfigError(f"{key}: expected true or false, got {value!r}")
    return word == "true"


def _parse_int(key: str, value: str, *, minimum: int | None = None) -> int:
    try:
        number = int(value.strip(), 10)
    except ValueError:
        raise MirrorConfigError(f"{key}: expected an integer, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise MirrorConfigError(f"{key}: must be at least {minimum}, got {number}")
    return number


def _parse_policy(
    key: str, value: str, separator: str, internal_sep: bool, source: str
) -> DefaultReplicationPolicy:
    name = value.strip()
    short = name.removeprefix(_POLICY_PACKAGE)
    if short == DEFAULT_POLICY:
        return DefaultReplicationPolicy(separator, internal_sep)
    if short == IDENTITY_POLICY:
        return IdentityReplicationPolicy(separator, internal_sep, source)
    raise MirrorConfigError(
        f"{key}: {name!r} is not supported; use {DEFAULT_POLICY} or {IDENTITY_POLICY}"
    )


def _build(props: dict[str, str], only_targets: tuple[str, ...] | None) -> MirrorConfig:
    if "clusters" not in props:
        raise MirrorConfigError("clusters: required (the list of cluster aliases)")
    aliases = tuple(dict.fromkeys(parse_list(props["clusters"])))
    if not aliases or any(not a for a in aliases):
        raise MirrorConfigError(f"clusters: expected a list of aliases, got {props['clusters']!r}")
    bootstrap: dict[str, str] = {}
    for alias in aliases:
        key = f"{alias}.bootstrap.servers"
        value = props.get(key, "").strip()
        if not value:
            raise MirrorConfigError(f"{key}: required for cluster {alias!r}")
        bootstrap[alias] = value
    if only_targets is not None:
        for alias in only_targets:
            if alias not in aliases:
                raise MirrorConfigError(
                    f"--clusters: unknown cluster alias {alias!r} (clusters = {', '.join(aliases)})"
                )
    for key in props:
        for removed, replacement in _REMOVED.items():
            if key == removed or key.endswith("." + removed):
                raise MirrorConfigError(
                    f"{key}: removed in Kafka 4.0 (KAFKA-17529); use {replacement}"
                )
    _check_flow_aliases(props, aliases)
    flows = []
    for source in aliases:
        for target in aliases:
            if source == target:
                continue
            flow = _flow(props, source, target)
            if not flow.enabled and flow.emit_heartbeats_interval_s is None:
                continue
            if only_targets is not None and target not in only_targets:
                continue
            flows.append(flow)
    _check_identity_loops(flows)
    for alias in aliases:  # refuse untranslatable client settings now, not at first connect
        for role in _ROLES:
            _client_config(props, alias, role)
    _log_unused(props, aliases)
    return MirrorConfig(aliases, bootstrap, tuple(flows), props)


def _check_flow_aliases(props: Mapping[str, str], aliases: tuple[str, ...]) -> None:
    for key in props:
        head = key.split(".", 1)[0]
        if "->" not in head:
            continue
        source, _, target = head.partition("->")
        for alias in (source, target):
            if alias not in aliases:
                raise MirrorConfigError(
                    f"{key}: unknown cluster alias {alias!r} (clusters = {', '.join(aliases)})"
                )
        if source == target:
            raise MirrorConfigError(f"{key}: a flow needs two different clusters")


def _flow(props: Mapping[str, str], source: str, target: str) -> Flow:
    prefix = f"{source}->{target}."

    def raw(name: str, default: str | None = None) -> tuple[str, str | None]:
        if prefix + name in props:
            return prefix + name, props[prefix + name]
        if name in props:
            return name, props[name]
        return name, default

    def boolean(name: str) -> bool:
        key, value = raw(name)
        return _BOOL_DEFAULTS[name] if value is None else _parse_bool(key, value)

    def interval(task: str) -> int | None:
        if not boolean(f"{task}.enabled"):
            return None
        name = f"{task}.interval.seconds"
        key, value = raw(name)
        seconds = _INTERVAL_DEFAULTS[name] if value is None else _parse_int(key, value)
        if seconds == 0:
            raise MirrorConfigError(f"{key}: must be > 0 (or negative to disable)")
        return None if seconds < 0 else seconds

    def factor(name: str) -> int:
        key, value = raw(name)
        if value is None:
            return _REPLICATION_FACTOR_DEFAULTS[name]
        number = _parse_int(key, value)
        if number == 0 or number < -1:
            raise MirrorConfigError(f"{key}: must be -1 (broker default) or at least 1")
        return number

    def string(name: str) -> tuple[str, str]:
        key, value = raw(name, _STRING_DEFAULTS[name])
        assert value is not None
        return key, value

    # MM2's clusterPairs reads only the flow's own key, and defaults it to false.
    enabled_key = prefix + "enabled"
    enabled = enabled_key in props and _parse_bool(enabled_key, props[enabled_key])
    sep_key, separator = string("replication.policy.separator")
    if not separator:
        raise MirrorConfigError(f"{sep_key}: must not be empty")
    policy_key, policy_name = string("replication.policy.class")
    policy = _parse_policy(
        policy_key,
        policy_name,
        separator,
        boolean("replication.policy.internal.topic.separator.enabled"),
        source,
    )
    location_key, location = string("offset-syncs.topic.location")
    location = location.strip().lower()
    if location not in ("source", "target"):
        raise MirrorConfigError(f"{location_key}: expected source or target, got {location!r}")
    lag_key, lag = string("offset.lag.max")
    filters = {}
    for kind in ("topics", "groups"):
        inc_key, inc = string(kind)
        exc_key, exc = string(f"{kind}.exclude")
        try:
            filters[kind] = NameFilter.from_lists(
                inc, exc, include_key=inc_key, exclude_key=exc_key
            )
        except ValueError as exc_error:
            raise MirrorConfigError(str(exc_error)) from None
    return Flow(
        source=source,
        target=target,
        enabled=enabled,
        topic_filter=filters["topics"],
        group_filter=filters["groups"],
        policy=policy,
        refresh_topics_interval_s=interval("refresh.topics"),
        sync_topic_configs_interval_s=interval("sync.topic.configs"),
        sync_topic_acls_interval_s=interval("sync.topic.acls"),
        refresh_groups_interval_s=interval("refresh.groups"),
        emit_checkpoints_interval_s=interval("emit.checkpoints"),
        emit_heartbeats_interval_s=interval("emit.heartbeats"),
        sync_group_offsets_interval_s=interval("sync.group.offsets"),
        emit_offset_syncs_enabled=boolean("emit.offset-syncs.enabled"),
        heartbeats_replication_enabled=boolean("heartbeats.replication.enabled"),
        offset_syncs_topic_location="source" if location == "source" else "target",
        offset_lag_max=_parse_int(lag_key, lag, minimum=0),
        replication_factor=factor("replication.factor"),
        offset_syncs_topic_replication_factor=factor("offset-syncs.topic.replication.factor"),
        checkpoints_topic_replication_factor=factor("checkpoints.topic.replication.factor"),
        heartbeats_topic_replication_factor=factor("heartbeats.topic.replication.factor"),
        settings={k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)},
    )


def _check_identity_loops(flows: list[Flow]) -> None:
    enabled = {(f.source, f.target): f for f in flows if f.enabled}
    for (source, target), flow in enabled.items():
        back = enabled.get((target, source))
        if back is None or source > target:
            continue
        if flow.policy.name == IDENTITY_POLICY and back.policy.name == IDENTITY_POLICY:
            raise MirrorConfigError(
                f"replication.policy.class: {flow.name} and {back.name} both use "
                f"{IDENTITY_POLICY}, which cannot tell a mirrored topic from a local one, so "
                "records would loop between the clusters; use DefaultReplicationPolicy for one"
            )


def _client_config(props: Mapping[str, str], alias: str, role: ClientRole) -> dict[str, str]:
    java: dict[str, str] = {k: v for k, v in props.items() if is_client_key(k)}
    cluster_prefix = f"{alias}."
    role_prefix = f"{alias}.{role}."
    for key, value in props.items():
        if key.startswith(cluster_prefix) and is_client_key(key[len(cluster_prefix) :]):
            java[key[len(cluster_prefix) :]] = value
    for key, value in props.items():
        if key.startswith(role_prefix):
            java[key[len(role_prefix) :]] = value

    def spell(key: str) -> str:
        # The most specific level that set the key; a key not set is suggested per cluster.
        for spelled in (role_prefix + key, cluster_prefix + key, key):
            if spelled in props:
                return spelled
        return cluster_prefix + key

    try:
        return to_librdkafka(java, spell=spell)
    except ClientConfigError as exc:
        raise MirrorConfigError(str(exc)) from None


def _log_unused(props: Mapping[str, str], aliases: tuple[str, ...]) -> None:
    unused = []
    for key in props:
        if key == "clusters" or key in _FLOW_KEYS or is_client_key(key):
            continue
        head, _, rest = key.partition(".")
        if "->" in head and rest in _FLOW_KEYS:
            continue
        if head in aliases and (is_client_key(rest) or rest.startswith(_ROLES)):
            continue
        unused.append(key)
    if unused:
        log.info(
            "mirror config: keys Weir does not use (kept, as MM2 passes them through): %s",
            ", ".join(sorted(unused)),
        )
