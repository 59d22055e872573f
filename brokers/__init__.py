"""Weir's broker runtime: the Kafka protocol, the log, and the asyncio server.

Nothing under this package imports Django's ORM; the ``management`` commands are the
only Django-facing entry points and they hand over to plain asyncio code at once.
"""
