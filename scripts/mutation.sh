#!/usr/bin/env bash
# Mutation testing of the pure modules against the broker-free suite (docs/testing.md):
#   bash scripts/mutation.sh [module ...]
# A module is a path such as seqgate/schemas/binary.py; none means every module of
# [tool.mutmut] only_mutate in pyproject.toml. mutmut works on a copy in mutants/ (ignored by
# git), one mutant at a time (--max-children 1: the machine is shared) and niced. Prints a
# summary per module; exits 0 when mutmut ran, whatever survived, non-zero when it failed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/mutmut ]; then
  echo "mutation.sh: .venv/bin/mutmut is missing: run bash scripts/bootstrap.sh first" >&2
  exit 2
fi
if [ "$#" -eq 0 ]; then
  mapfile -t modules < <(.venv/bin/python -c '
import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["tool"]["mutmut"]["only_mutate"]))')
else
  modules=("$@")
fi
mkdir -p mutants
log=mutants/mutation.log
: >"$log"
timings=mutants/timings.tsv
: >"$timings"
echo "mutmut $(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("mutmut"))'); log: $log"
total_start=$(date +%s)
for module in "${modules[@]}"; do
  if [ ! -f "$module" ]; then
    echo "mutation.sh: no such module: $module" >&2
    exit 2
  fi
  dotted=${module%.py}
  dotted=${dotted//\//.}
  start=$(date +%s)
  echo "== $module" >>"$log"
  # A module's first run also collects, once for all, which test calls which function.
  if ! nice -n 10 .venv/bin/mutmut run --max-children 1 "$dotted.*" >>"$log" 2>&1; then
    echo "mutation.sh: mutmut failed on $module; the end of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  printf '%s\t%s\n' "$module" "$(($(date +%s) - start))" >>"$timings"
  echo "$module: $(($(date +%s) - start)) s"
done
echo "total: $(($(date +%s) - total_start)) s"
.venv/bin/python - "$timings" <<'PY'
import json
import sys
from collections import Counter
from pathlib import Path

from mutmut.__main__ import status_by_exit_code

rows = [line.split("\t") for line in Path(sys.argv[1]).read_text().splitlines()]
print(f"\n{'module':52} {'killed':>6} {'surv':>5} {'tmout':>5} {'notest':>6} {'other':>5} {'ratio':>13} {'s':>5}")
for module, seconds in rows:
    codes = json.loads(Path("mutants", module + ".meta").read_text())["exit_code_by_key"]
    count = Counter(status_by_exit_code[code] for code in codes.values())
    known = ("killed", "survived", "timeout", "no tests")
    other = sum(n for status, n in count.items() if status not in known)
    total = sum(count.values())
    ratio = f"{count['killed']}/{total} {100 * count['killed'] / total:.0f}%" if total else "-"
    print(
        f"{module:52} {count['killed']:6} {count['survived']:5} {count['timeout']:5}"
        f" {count['no tests']:6} {other:5} {ratio:>13} {seconds:>5}"
    )
    for name in sorted(k for k, code in codes.items() if status_by_exit_code[code] != "killed"):
        print(f"    {status_by_exit_code[codes[name]]:9} {name}")
PY
