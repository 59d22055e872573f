"""The control plane's side of the brokers: the v3 REST resources for brokers, configs and
ACLs, the operations API (reassignments, elections, rebalance) and the Kafka-tool-parity
management commands. The broker runtime itself is the Django-free package :mod:`weir`.
"""
