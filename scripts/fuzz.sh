#!/usr/bin/env bash
# fuzz.sh runs every Fuzz* target in the module for a while each.
#   scripts/fuzz.sh [FUZZTIME]     e.g. scripts/fuzz.sh 1m
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-30s}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
for pkg in $("$GO" list ./...); do
  dir=$("$GO" list -f '{{.Dir}}' "$pkg")
  for target in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' "$dir"/*_test.go 2>/dev/null | awk '{print $2}'); do
    echo "fuzz: $pkg $target ($fuzztime)"
    "$GO" test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -fuzzminimizetime=5s "$pkg"
  done
done
