"""The operator side of cross-cluster mirroring (issue 18): ``/api/mirrors/``, the failover
action, and what the dashboard and ``/metrics`` show about the ``mirror-maker`` processes."""
