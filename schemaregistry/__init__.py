"""Confluent Schema Registry's REST API under ``/schema-registry`` (issue 19).

The registry itself (formats, Confluent's rules, the ``_schemas`` topic) is the Django-free
:mod:`weir.registry`; this app is its web face: :mod:`schemaregistry.registry` opens one
store per web process, :mod:`schemaregistry.api` maps each Confluent endpoint onto one
:class:`~weir.registry.service.SchemaRegistry` operation, and :mod:`schemaregistry.content`
speaks Confluent's media types.
"""
