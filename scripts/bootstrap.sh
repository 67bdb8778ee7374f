#!/usr/bin/env bash
# Create .venv and install seqgate with its test tools, the faust extra, whose consumer
# test (tests/kafka/test_faust_consumer.py) CI runs, and the bench extra, whose chart the
# bench tests draw (idempotent, quiet).
#   bash scripts/bootstrap.sh --tests   # also fetch, once, what the tests download
#                                       # (tests/support/prefetch.py; scripts/test.sh does)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test,faust,bench]"
if [ "${1:-}" = "--tests" ]; then
  echo "== prefetch (Kafka jars, Azurite, Apicurio Registry, the bench's peers; cached)"
  .venv/bin/python -m tests.support.prefetch
fi
