#!/usr/bin/env bash
# The fast tier (docs/testing.md), as CI runs it (.ci/run): install everything, lint,
# type-check and check the import layers (and the compiled core's Rust: fmt, clippy, its
# own tests), then
#   1. the broker-free tests (tests/unit), spread over the cores with pytest-xdist;
#   2. the tests against real Kafka brokers (tests/kafka, tests/torture) at the fast tier's
#      sizes (tests/support/tier.py), three at a time: each xdist worker has its session
#      broker; the session 3-node cluster's tests, and the SASL_SSL broker's, go to one
#      worker each (tests/conftest.py), the longest first (tests/durations.json).
# Arguments, when given, replace both runs by one `pytest ARGS` (e.g. a file, or `-k`).
# The Kafka tests use $KAFKA_BOOTSTRAP_SERVERS when set; otherwise the fixtures start a real
# Apache Kafka broker. JUnit XML with every test's duration: build/test-reports/.
# The full-size proofs are the soak tier: bash scripts/soak.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export SEQGATE_TEST_TIER=fast
started=$SECONDS
# shellcheck source=scripts/test_setup.sh
. scripts/test_setup.sh
echo "== ruff"
.venv/bin/ruff check seqgate devtools tests examples
echo "== mypy --strict"
.venv/bin/mypy --strict seqgate devtools/seqgate_devtools
echo "== import layers"
.venv/bin/lint-imports --no-cache
echo "== core/ (seqgate._core): cargo fmt, clippy -D warnings, cargo test"
(cd core && cargo fmt --check && cargo clippy --quiet --all-targets -- -D warnings \
  && cargo test --quiet)
status=0
if [ "$#" -gt 0 ]; then
  echo "== pytest $*"
  run_pytest selected "$@" || status=$?
else
  echo "== pytest tests/unit (broker-free, pytest-xdist)"
  run_pytest unit -n "${SEQGATE_TEST_WORKERS:-auto}" tests/unit || status=$?
  echo "== pytest tests/kafka tests/torture (fast tier, pytest-xdist: a module per work unit)"
  run_pytest kafka -n "${SEQGATE_KAFKA_TEST_WORKERS:-3}" --dist loadgroup --no-loadscope-reorder \
    tests/kafka tests/torture || status=$?
fi
echo "fast tier: $((SECONDS - started)) s in all (install and lint included), exit $status"
# The closing line of both pytest runs together (CI reads the last one).
.venv/bin/python -m tests.support.durations --summary "$REPORTS"/*.xml || true
exit "$status"
