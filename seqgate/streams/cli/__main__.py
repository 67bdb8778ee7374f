"""`python -m seqgate.streams.cli`: the same as the `seqgate` command."""

from seqgate.streams.cli import main

main()
