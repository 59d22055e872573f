"""The analytics jobs, one module each (``traffic``, ``hot_partitions``, ``record_sizes``,
``lag_trends``), sharing ``common`` (inputs, output shape, reading topics, Plotly helpers)."""
