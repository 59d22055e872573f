"""Weir's coordination layer: Redis as the cluster's metadata quorum.

Modules: ``records`` (the metadata log's record types), ``image`` (immutable in-memory cluster
image and pure record application), ``store`` (fenced atomic writes and snapshots),
``registration`` (broker leases and epochs), ``cache`` (a broker's local copy tailing the
log), ``placement`` (Kafka's replica assignment), ``keys`` (the Redis key layout) and
``errors``. Import from the modules; this package re-exports nothing to keep imports cheap.
"""
