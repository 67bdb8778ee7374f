"""seqgate's development tools, a package of their own (devtools/pyproject.toml) so that
the runtime wheel and the image carry only what production runs.

- :mod:`seqgate_devtools.bench`: `seqgate bench` (the processor against its limit, the
  SQLite reference, latency, restore, the bridge, failover, and the peers side by side);
- :mod:`seqgate_devtools.broker`: the development Kafka broker and cluster that
  `seqgate broker`, `seqgate demo`, the bench and the tests start;
- :mod:`seqgate_devtools.demo`: `seqgate demo`;
- :mod:`seqgate_devtools.samples`: the everyday sample notifications of each provider;
- :mod:`seqgate_devtools.cli`: the three commands, which join `seqgate` through the
  ``seqgate.commands`` entry points.
"""
