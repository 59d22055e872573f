"""The Kafka wire protocol, sans-io: bytes in, request objects out; responses to bytes.

Nothing in this package performs I/O or imports asyncio. Message schemas come from
``kio`` (generated from Kafka's own JSON message specs); record batches stay opaque bytes
with a parsed header (see ``records``).
"""
