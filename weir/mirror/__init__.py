"""Cross-cluster mirroring compatible with Kafka's MirrorMaker 2 (KIP-382).

``manage.py mirror-maker PROPERTIES [--clusters ALIAS ...]`` (issue 18, being built) reads
MM2's own ``connect-mirror-maker.properties`` and does MM2's job between any two Kafka-protocol
clusters: it copies topics under MM2's replication policies, writes MM2's heartbeats,
checkpoints and offset-syncs topics, and translates group offsets.

The package is layered. The bottom layer is pure logic with no I/O: ``properties`` (the Java
``.properties`` reader), ``config`` (the effective settings of every flow, with MM2's
precedence and defaults, and librdkafka client configs), ``policy`` (the replication policies'
topic naming and loop prevention), ``filters`` (which topics and groups a flow copies),
``clients`` (Java client settings as librdkafka's, or refused) and ``formats`` (MM2's
OffsetSync, Checkpoint and Heartbeat records, byte-exact). This layer is what exists so far.
The runtime that moves records sits on top of them. Like the rest of the broker runtime it
imports no Django; an import-linter contract keeps it that way.
"""
