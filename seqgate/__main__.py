"""`python -m seqgate`: the same as the `seqgate` command."""

from seqgate.cli import main

main()
