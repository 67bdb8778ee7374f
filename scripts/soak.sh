#!/usr/bin/env bash
# The soak tier (docs/testing.md): the full-size proofs the fast tier runs smaller — the
# 200,000-event kill -9 runs, the whole cluster-fault and partition matrix, the peers'
# torture, the largest state-damage cases, the compiled core's million-record differential
# run (tests/unit, no broker) — against real brokers, the tests marked
# tier("soak") at SEQGATE_TEST_TIER=soak sizes (tests/support/tier.py), one at a time;
# about 30 minutes here.
# Arguments are passed to pytest (e.g. one file). It fails when it collects no test.
set -euo pipefail
cd "$(dirname "$0")/.."
export SEQGATE_TEST_TIER=soak
started=$SECONDS
# shellcheck source=scripts/test_setup.sh
. scripts/test_setup.sh
echo "== pytest (soak tier)"
status=0
if [ "$#" -gt 0 ]; then
  run_pytest soak "$@" || status=$?
else
  run_pytest soak tests/unit tests/kafka tests/torture || status=$?
fi
echo "soak tier: $((SECONDS - started)) s in all, exit $status"
.venv/bin/python -m tests.support.durations --summary "$REPORTS/soak.xml" || true
exit "$status"
