#!/usr/bin/env bash
# Create .venv and install seqgate with its test tools and the faust extra, whose consumer
# test (tests/kafka/test_faust_consumer.py) CI runs; and the development tools (devtools/)
# with their chart extra, whose chart the bench tests draw (idempotent, quiet).
#   bash scripts/bootstrap.sh --tests   # also fetch, once, what the tests download
#                                       # (tests/support/prefetch.py; scripts/test.sh does)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# seqgate itself, and beside it the development tools (devtools/: `seqgate bench`, `broker`,
# `demo`), which its wheel and image leave out.
.venv/bin/python -m pip install --quiet -e ".[test,faust]" -e "./devtools[chart]"
if [ "${1:-}" = "--tests" ]; then
  echo "== prefetch (Kafka jars, Azurite, Apicurio Registry, the bench's peers; cached)"
  .venv/bin/python -m tests.support.prefetch
fi
