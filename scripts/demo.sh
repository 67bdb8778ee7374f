#!/usr/bin/env bash
# Install seqgate and run the guide's demonstration end to end on a local Kafka broker.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/seqgate demo "$@"
