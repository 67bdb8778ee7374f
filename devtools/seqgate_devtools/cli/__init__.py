"""The development commands (`bench`, `broker`, `demo`): click commands that the `seqgate`
group adds when this package is installed (entry points ``seqgate.commands``,
devtools/pyproject.toml). They use seqgate's shared options (:mod:`seqgate.cli.options`)."""
