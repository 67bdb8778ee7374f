# Sourced by scripts/test.sh and scripts/soak.sh: install everything the tests need, start
# the services they use, and check the tools they drive. Nothing here runs a test.
#  - .venv with seqgate and its test tools (scripts/bootstrap.sh), then every download a test
#    would otherwise make in its setup (tests/support/prefetch.py: Kafka jars, Azurite,
#    Apicurio Registry, the bench's peers), cached under ~/.cache/seqgate;
#  - a throwaway PostgreSQL for the dispatcher's tests, unless $SEQGATE_TEST_POSTGRES_URL;
#  - iptables and ip (iproute2), which the partition and namespace tests drive.
# Under CI (CI set) whatever is missing fails the run here, before any test.
if [ -n "${CI:-}" ] && [ "${SEQGATE_ALLOW_NO_KAFKA:-}" = "1" ]; then
  # It turns every Kafka test into a skip, and a run without Kafka into a pass.
  echo "SEQGATE_ALLOW_NO_KAFKA=1 is refused in CI: the Kafka tests must run" >&2
  exit 1
fi
bash scripts/bootstrap.sh --tests
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
echo "== iptables"
# The network-partition test drops loopback packets to a private broker's port; the
# network-fault harness (tests/support/netns.py) also needs ip (iproute2) for namespaces.
missing=""
command -v iptables >/dev/null 2>&1 || missing="$missing iptables"
command -v ip >/dev/null 2>&1 || missing="$missing iproute2"
if [ -n "$missing" ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    # shellcheck disable=SC2086  # $missing is a list of package names
    apt-get install -y -qq --no-install-recommends $missing >/dev/null \
      || { apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null; } \
      || echo "$missing could not be installed: the partition and namespace tests will be skipped" >&2
  else
    echo "no$missing (needs root and apt-get): the partition and namespace tests will be skipped" >&2
  fi
fi
if [ -n "${CI:-}" ] && ! command -v iptables >/dev/null 2>&1; then
  echo "iptables is required in CI (tests/torture/test_torture_txn_timeout.py)" >&2
  exit 1
fi
if [ -n "${CI:-}" ] && ! command -v ip >/dev/null 2>&1; then
  echo "ip (iproute2) is required in CI (tests/unit/test_netns_harness.py)" >&2
  exit 1
fi

REPORTS="build/test-reports"
rm -rf "$REPORTS"  # this run's reports only
mkdir -p "$REPORTS"

# run_pytest NAME ARGS...: one pytest run; its JUnit XML (every test's duration) is
# $REPORTS/NAME.xml and its slowest tests are printed after it (tests/support/durations.py).
# Exit 5 (no test collected) fails the run.
run_pytest() {
  local name="$1"
  shift
  local status=0
  .venv/bin/python -m pytest --junitxml="$REPORTS/$name.xml" "$@" || status=$?
  .venv/bin/python -m tests.support.durations --top 10 "$REPORTS/$name.xml" || true
  if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests ($name): failing the run" >&2
    return 1
  fi
  return "$status"
}
