"""Cross-cluster mirroring in the control plane: the ``mirror-maker`` command, and the
operator side -- ``/api/mirrors/``, the failover action, and what the dashboard and
``/metrics`` show about the ``mirror-maker`` processes. The mirror itself is the Django-free
``weir.mirror``."""
