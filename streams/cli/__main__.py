"""`python -m streams.cli`: the same as the `seqgate` command."""

from streams.cli import main

main()
