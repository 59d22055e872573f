"""Weir's schema registry: Confluent Schema Registry's model (subjects, versions, global ids,
compatibility levels, modes) stored in the cluster's compacted ``_schemas`` topic.

``formats`` parses and compares schemas (Avro, JSON Schema, Protobuf). The control plane's
``schemaregistry`` app serves the API under ``/schema-registry``. Like the rest of the broker
runtime this package imports no Django.
"""
