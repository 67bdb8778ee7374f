#!/usr/bin/env bash
# Install everything, lint and type-check, then run the whole test suite.
# The Kafka tests use $KAFKA_BOOTSTRAP_SERVERS when set; otherwise the fixtures
# start a real Apache Kafka broker (resolved from Maven Central on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
echo "== ruff"
.venv/bin/ruff check connectors schemas streams tests
echo "== mypy --strict"
.venv/bin/mypy --strict connectors schemas streams
echo "== postgres"
# The dispatcher's PostgreSQL tests need a server: start a throwaway one unless given one.
if [ -z "${SEQGATE_TEST_POSTGRES_URL:-}" ]; then
  if url="$(bash scripts/postgres.sh | tail -n 1)" && [ -n "$url" ]; then
    export SEQGATE_TEST_POSTGRES_URL="$url"
    echo "using $SEQGATE_TEST_POSTGRES_URL (scripts/postgres.sh)"
  elif [ -n "${CI:-}" ]; then
    echo "scripts/postgres.sh failed: PostgreSQL is required in CI" >&2
    exit 1
  else
    echo "no PostgreSQL: the PostgreSQL tests will be skipped" >&2
  fi
else
  echo "using SEQGATE_TEST_POSTGRES_URL=$SEQGATE_TEST_POSTGRES_URL"
fi
echo "== pytest"
set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing the run" >&2
  exit 1
fi
exit "$status"
