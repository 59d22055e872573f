"""Cross-cluster mirroring compatible with Kafka's MirrorMaker 2 (KIP-382).

``manage.py mirror-maker PROPERTIES [--clusters ALIAS ...]`` (docs/mirroring.md) reads
MM2's own ``connect-mirror-maker.properties`` and does MM2's job between any two Kafka-protocol
clusters: it copies topics under MM2's replication policies, writes MM2's heartbeats,
checkpoints and offset-syncs topics, and translates group offsets.

The package is layered. The bottom layer is pure logic with no I/O: ``properties`` (the Java
``.properties`` reader), ``config`` (the effective settings of every flow, with MM2's
precedence and defaults, and librdkafka client configs), ``policy`` (the replication policies'
topic naming and loop prevention), ``filters`` (which topics and groups a flow copies),
``clients`` (Java client settings as librdkafka's, or refused) and ``formats`` (MM2's
OffsetSync, Checkpoint and Heartbeat records, byte-exact). On top of it, one flow's runtime:
``topics`` plans which source topics the flow mirrors and what the target must look like
(names, partitions, synced configs) and applies the plan with an AdminClient; ``replicate``
copies the records with a source consumer and an idempotent target producer, committing source
offsets only after the target acknowledged them, and writes MM2's offset syncs plus the
both-ends "break" syncs that make translation exact; ``translate`` (pure) turns the offset-syncs
history into exact target offsets for committed group offsets; ``checkpoints`` runs MM2's
checkpoint task (one leader per flow, checkpoints, group offset sync that skips and reports
groups active on the target) and its heartbeat task; ``acls`` syncs topic ACLs by MM2's rule.
On top, the process: ``worker`` runs one flow on two threads (records; periodic topic, ACL,
checkpoint and heartbeat steps) with retries and backoff, ``maker`` runs every flow of a
configuration and publishes each flow's ``status`` to the coordination Redis for the control
plane (the ``mirrors`` app: the command, ``/api/mirrors/``, the failover).
Like the rest of the broker runtime it imports no Django; an import-linter contract keeps it
that way.
"""
