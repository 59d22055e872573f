"""MirrorMaker 2-compatible cross-cluster mirroring (Django-free)."""
