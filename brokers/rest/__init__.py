"""Confluent REST Proxy compatible endpoints for clusters, brokers and broker configs.

``common`` holds what every v3 resource shares (cluster check, resource metadata, related
links, Kafka error mapping, config entries), ``configs`` talks DescribeConfigs /
IncrementalAlterConfigs, ``v3`` and ``v2`` are the thin DRF views. The topics app builds its
own v3 resources on the same ``common`` helpers.
"""
