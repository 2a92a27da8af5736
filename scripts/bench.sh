#!/usr/bin/env bash
# bench.sh runs the Go benchmarks and prints them as one Markdown table.
#   scripts/bench.sh [PACKAGES...] [-- GO_TEST_FLAGS...]
# Defaults: all packages, -benchtime=1x for slow end-to-end benchmarks is up
# to each benchmark; set BENCHTIME (default 1s) to change the run length.
# Raw output is kept in var/bench.txt for benchstat.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
# Flags after -- come after the defaults, so they win (-bench to pick
# benchmarks, -benchtime 10x for a fixed count).
pkgs=() flags=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do pkgs+=("$1"); shift; done
[ $# -gt 0 ] && shift && flags=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)
mkdir -p var
"$GO" test -run='^$' -bench=. -benchmem -benchtime="${BENCHTIME:-1s}" "${pkgs[@]}" ${flags[@]+"${flags[@]}"} | tee var/bench.txt >&2
echo
echo "| package | benchmark | results |"
echo "|---|---|---|"
awk '
  /^pkg: / { pkg = $2; sub(/^github.com\/mynah-tts\/mynah\//, "", pkg) }
  /^Benchmark/ {
    name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
    res = ""
    for (i = 3; i < NF; i += 2) {
      v = $i; u = $(i+1)
      if (u == "ns/op" && v >= 1e6) { v = sprintf("%.2f", v/1e6); u = "ms/op" }
      res = res (res == "" ? "" : ", ") v " " u
    }
    printf "| %s | %s | %s |\n", pkg, name, res
  }
' var/bench.txt
