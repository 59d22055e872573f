"""Cross-cluster mirroring in the control plane: the ``mirror-maker`` command, the mirrors
API and page. The mirror itself is the Django-free ``weir.mirror``."""
