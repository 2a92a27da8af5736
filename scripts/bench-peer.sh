#!/usr/bin/env bash
# bench-peer.sh compares mynah with a peer runtime, sherpa-onnx (the npm
# packages sherpa-onnx-node and sherpa-onnx-linux-x64, which bring their
# own ONNX Runtime), on the same Piper-contract models: the demo voice and
# quant/benchmodel's 15 M-parameter Piper-medium-shaped model. It prints one
# Markdown table per model: mynah, sherpa, and the mynah/sherpa ratio
# (below 1: mynah ahead), all measured in one run on this machine.
#
#   scripts/bench-peer.sh             fails where the benchmark cannot run
#   scripts/bench-peer.sh --optional  (make bench) says why and exits 0 there
#
# sherpa-onnx is installed into .peer/ (ignored by git) with npm; a second
# run finds it there. The models, sherpa's copies (metadata_props and
# tokens.txt written by audio/voice/peer) and the raw benchmark output
# (var/bench-peer.txt) go under var/. MYNAH_PEER_ROUNDS (timed passes over
# the sentences, default 3), MYNAH_PEER_STARTS (worker starts per side,
# default 11), MYNAH_PEER_FIRSTS (of them, first starts without an
# optimized copy, default 3) and MYNAH_PEER_INSTALLS (starts right after
# an install's prepare, default 3; at least one start is left for later
# starts) trade time for steadier medians. mynah's side runs with
# mynahd's C allocator tuning; MYNAH_MALLOC_TUNE=0 measures it with glibc's
# defaults instead.
set -euo pipefail

SHERPA_VERSION=1.13.8
SHERPA_PACKAGES=(sherpa-onnx-node sherpa-onnx-linux-x64)
ESPEAK_DATA=${MYNAH_PEER_ESPEAK_DATA:-/usr/lib/x86_64-linux-gnu/espeak-ng-data}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
prog=bench-peer
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
peer_dir=$root/.peer
started=$SECONDS

optional=0
case "${1:-}" in
  --optional) optional=1 ;;
  "") ;;
  *) echo "usage: scripts/bench-peer.sh [--optional]" >&2; exit 2 ;;
esac

step() { echo "$prog: $*" >&2; }
die() { echo "$prog: $*" >&2; exit 1; }
# cannot: the benchmark cannot run here; make bench goes on without it.
cannot() {
  if [ "$optional" = 1 ]; then
    echo "$prog: skipped: $*" >&2
    exit 0
  fi
  die "$*"
}

if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
  cannot "the peer benchmark needs linux x64 (sherpa-onnx-linux-x64 is the only sherpa build it installs); this is $(uname -s) $(uname -m)"
fi
command -v node >/dev/null || cannot "node is needed to run sherpa-onnx-node (apt-get install nodejs npm)"
command -v npm >/dev/null || cannot "npm is needed to install sherpa-onnx-node (apt-get install npm)"
command -v flock >/dev/null || cannot "flock is needed (apt-get install util-linux)"
[ -f "$ESPEAK_DATA/phontab" ] || cannot "no espeak-ng-data at $ESPEAK_DATA for sherpa-onnx (run scripts/setup.sh, or set MYNAH_PEER_ESPEAK_DATA)"

# installed_version PKG prints the version of PKG in .peer/, or nothing.
installed_version() {
  local pj="$peer_dir/node_modules/$1/package.json"
  [ -f "$pj" ] && node -e 'process.stdout.write(require(process.argv[1]).version)' "$pj" 2>/dev/null || true
}

sherpa_installed() {
  local p
  for p in "${SHERPA_PACKAGES[@]}"; do
    [ "$(installed_version "$p")" = "$SHERPA_VERSION" ] || return 1
  done
}

install_sherpa() {
  sherpa_installed && return 0
  local specs=() p
  for p in "${SHERPA_PACKAGES[@]}"; do specs+=("$p@$SHERPA_VERSION"); done
  step "installing ${specs[*]} into .peer/ (about 35 MB)"
  mkdir -p "$peer_dir"
  # The packages are prebuilt: no install scripts to run.
  npm install --prefix "$peer_dir" --save-exact --ignore-scripts --no-audit --no-fund --loglevel=error "${specs[@]}" >&2 \
    || die "npm install ${specs[*]} failed (is the npm registry reachable?)"
  sherpa_installed || die "npm did not install ${specs[*]} into .peer/node_modules"
}

mkdir -p var/peer
# One run at a time: a second would rewrite the models under the first's
# workers, and both would time a machine they share.
exec 9>var/peer/lock
if ! flock -n 9; then
  step "waiting for another bench-peer run to finish"
  flock 9
fi
install_sherpa
step "building the benchmark (audio/voice/peer)"
"$GO" test -c -o var/peer/peer.test ./audio/voice/peer

step "running BenchmarkPeerSherpa: both workers interleaved, sentence by sentence (a few minutes on 2 cores)"
if ! (
  cd audio/voice/peer
  MYNAH_PEER_NODE_MODULES="$peer_dir/node_modules" MYNAH_PEER_ESPEAK_DATA="$ESPEAK_DATA" MYNAH_PEER_DIR="$root/var/peer/models" \
    "$root/var/peer/peer.test" -test.run='^$' -test.bench='^BenchmarkPeerSherpa$' -test.benchtime=1x -test.v
) | tee var/bench-peer.txt >&2; then
  die "the benchmark failed (output in var/bench-peer.txt)"
fi
grep -q '^BenchmarkPeerSherpa/' var/bench-peer.txt || die "the benchmark reported nothing (output in var/bench-peer.txt)"

echo
awk -v rounds="${MYNAH_PEER_ROUNDS:-3}" -v starts="${MYNAH_PEER_STARTS:-11}" -v firsts="${MYNAH_PEER_FIRSTS:-3}" -v installs="${MYNAH_PEER_INSTALLS:-3}" '
  # The ratio is the benchmark'"'"'s: for times, the median of back-to-back
  # pairs, which can differ a little from the medians'"'"' quotient.
  function row(label, key, digits,   m, s, r, f, k) {
    m = v["mynah-" key]; s = v["sherpa-" key]
    k = key; sub(/\/.*/, "", k)
    r = (("ratio-" k) in v) ? sprintf("%.2f", v["ratio-" k]) : ((s > 0) ? sprintf("%.2f", m / s) : "–")
    f = "%." digits "f"
    printf "| %s | " f " | " f " | %s |\n", label, m, s, r
  }
  # The benchmark logs the runtimes before its result line.
  /: mynah: mynah / { runtimes = $0; sub(/.*: mynah: /, "", runtimes); sub(/; sherpa: /, " vs ", runtimes) }
  /^BenchmarkPeerSherpa\// && NF > 3 {
    name = $1; sub(/^BenchmarkPeerSherpa\//, "", name); sub(/-[0-9]+$/, "", name)
    delete v
    for (i = 3; i < NF; i += 2) v[$(i+1)] = $i
    printf "%s### %s\n\n", (tables++ ? "\n" : ""), name
    print "| metric | mynah | sherpa | mynah/sherpa |"
    print "|---|---|---|---|"
    row("synthesis per sentence (ms)", "synth-ms/sentence", 1)
    row("model load in process, first start, no optimized copy (ms)", "firstload-ms", 1)
    printf "| mynah voice install'"'"'s prepare, download excluded (ms) | %.1f | – | – |\n", v["mynah-prepare-ms"]
    row("model load in process, first start after mynah voice install (ms)", "installload-ms", 1)
    row("model load in process, later starts (ms)", "load-ms", 1)
    row("process start → ready (ms)", "ready-ms", 1)
    row("peak RSS, load + 10 sentences (MB)", "peak-MB", 1)
    row("peak RSS once loaded (MB)", "loadpeak-MB", 1)
    row("RSS before the load (MB)", "base-MB", 1)
    row("audio of the 10 sentences (s)", "audio-s", 2)
    printf "\n%s; one intra-op thread each; times are medians of %s timed passes and %s starts (%s first, %s after an install, the rest later starts), time ratios medians of back-to-back pairs.\n", runtimes, rounds, starts, firsts, installs
  }
' var/bench-peer.txt
step "done in $((SECONDS - started)) s (raw output: var/bench-peer.txt)"
