#!/usr/bin/env bash
# Proves the two README commands on a fresh clone: no venv, an empty data cache.
#   bash scripts/fresh_clone_check.sh [REPO] [WORKDIR]
set -euo pipefail
repo=${1:-$(git rev-parse --show-toplevel)}
work=${2:-$(mktemp -d)}
export GENFEAT_DATA="$work/data"
git clone -q "$repo" "$work/genfeat"
cd "$work/genfeat"
echo "commit $(git rev-parse --short HEAD), clone at $work/genfeat, GENFEAT_DATA=$GENFEAT_DATA"
test ! -e .venv
t0=$(date +%s)
make test 2>&1 | tail -n 3
t1=$(date +%s)
echo "make test (fresh venv + install + suite): $((t1 - t0)) s"
make quickstart 2>&1 | tr '\r' '\n' | grep -vE '^lm:|^gpt:|^ *$' | tail -n 8
t2=$(date +%s)
echo "make quickstart (venv reused, PTB fetched, training, report): $((t2 - t1)) s"
ls runs/*/
