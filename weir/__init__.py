"""Weir's broker runtime: the Kafka protocol, the log, replication, the controller, the
group coordinator and the asyncio server.

This package imports no Django and no control-plane app (``tests/test_architecture.py``
enforces it); the control plane reaches it through a small public surface (the broker
client, the metadata readers and the command channels). Run a broker with ``python -m
weir.runbroker`` or ``manage.py runbroker``.
"""
