#!/usr/bin/env bash
# cross-test.sh runs mynah's tests as arm64 binaries under qemu-user, so that
# "works on a Raspberry Pi" is something a test run shows.
#
#   scripts/cross-test.sh [PACKAGE...]    default: every package (./...)
#
# It cross-compiles each package's test binary against an arm64 sysroot
# (Debian's own arm64 packages, unpacked into .cross/arm64/ without touching
# the host's dpkg state) and runs it under qemu-aarch64 with the arm64
# ONNX Runtime. The first run downloads about 150 MB; later runs reuse it.
#
#   MYNAH_QEMU_CPU=cortex-a76        CPU qemu emulates (cortex-a76: Pi 5,
#                                    cortex-a72: Pi 4, cortex-a53: Pi 3/Zero 2)
#   MYNAH_QEMU_SECOND_CPU=cortex-a72 runs quant and quant/ort once more on it
#                                    (no dot-product instructions); "" skips
#   MYNAH_CROSS_SLOW=1               includes the tests left out for taking
#                                    tens of minutes under emulation
#   MYNAH_CROSS_TIMEOUT=45m          -test.timeout of each package
#   MYNAH_CROSS_RUN=REGEXP           runs only the tests REGEXP names
#                                    (-test.run), e.g. TestMemoryBoundedSoak
#
# It prints a table of packages passed and failed and exits 1 if any failed.
set -euo pipefail

# shellcheck source=scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

cpu=${MYNAH_QEMU_CPU:-cortex-a76}
second_cpu=${MYNAH_QEMU_SECOND_CPU-cortex-a72}
timeout=${MYNAH_CROSS_TIMEOUT:-45m}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

cross="$root/.cross/arm64"
sysroot="$cross/sysroot"
ort_lib="$cross/ort/libonnxruntime.so.1"

HOST_PACKAGES=(gcc-aarch64-linux-gnu qemu-user pkg-config)
# The arm64 packages the tests link against and load; apt adds their
# dependencies. libstdc++6 and libgcc-s1 are for ONNX Runtime.
SYSROOT_PACKAGES=(libc6 libc6-dev libstdc++6 libgcc-s1
  libespeak-ng1 libespeak-ng-dev espeak-ng-data
  libportaudio2 portaudio19-dev libasound2 libasound2-dev)

# Tests that take tens of minutes under emulation, left out unless
# MYNAH_CROSS_SLOW=1: package, then a -test.skip pattern.
declare -A SLOW_TESTS=(
  [cmd/mynah]='^TestQuantizeVoice$' # quantizes a whole voice: ~23 min
  # a long sentence on the 15 M voice, whose memory verdict emulation
  # cannot give anyway: ~8 min
  [audio/voice]='^TestReleaseMemoryGivesTheArenaBack$'
)

# Packages run a second time on $second_cpu: the ones whose kernels ONNX
# Runtime picks by CPU feature.
SECOND_CPU_PACKAGES=(quant quant/ort)

# arm_apt runs apt-get or apt-cache against a private arm64-only package
# state under .cross/, never the host's: installing :arm64 packages through
# the host's multiarch would upgrade dozens of installed amd64 ones.
arm_apt() {
  local tool=$1
  shift
  local a="$cross/apt"
  mkdir -p "$a/lists/partial" "$a/archives/partial"
  touch "$a/status"
  "$tool" -o APT::Architecture=arm64 -o APT::Architectures::=arm64 \
    -o Dir::State="$a" -o Dir::State::Lists="$a/lists" -o Dir::State::status="$a/status" \
    -o Dir::Cache="$a" -o Dir::Cache::archives="$a/archives" \
    -o Debug::NoLocking=1 -o APT::Sandbox::User=root "$@"
}

# build_sysroot unpacks the arm64 packages and their dependencies into
# $sysroot. The stamp names the request, so a changed list rebuilds it.
build_sysroot() {
  local stamp="$cross/sysroot.stamp" want="${SYSROOT_PACKAGES[*]}"
  if [ -d "$sysroot" ] && [ "$(head -n1 "$stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  step "building the arm64 sysroot in $sysroot"
  arm_apt apt-get update -qq || die "apt-get update of the arm64 package lists failed (is deb.debian.org reachable?)"
  # An empty dpkg status makes apt resolve every dependency from nothing.
  local plan
  plan=$(arm_apt apt-get install -s --no-install-recommends "${SYSROOT_PACKAGES[@]}") \
    || die "apt cannot resolve the arm64 packages: ${SYSROOT_PACKAGES[*]}"
  local debs
  mapfile -t debs < <(awk '/^Inst / { v = $3; gsub(/[()\[\]]/, "", v); print $2 "=" v }' <<<"$plan")
  [ ${#debs[@]} -gt 0 ] || die "apt planned no arm64 packages"
  local dl="$cross/debs"
  mkdir -p "$dl"
  (cd "$dl" && arm_apt apt-get download -qq "${debs[@]}" >/dev/null) \
    || die "apt-get download of the arm64 packages failed"
  rm -rf "$sysroot.tmp"
  mkdir -p "$sysroot.tmp"
  local d
  for d in "${debs[@]}"; do
    local name=${d%%=*} version=${d#*=}
    local deb
    deb=$(ls "$dl/${name}_${version//:/%3a}_"*.deb 2>/dev/null | head -n1)
    [ -n "$deb" ] || die "downloaded no .deb for $d"
    dpkg-deb -x "$deb" "$sysroot.tmp" || die "dpkg-deb -x $deb failed"
  done
  # Absolute links (libfoo.so -> /lib/...) would point into the host.
  local link target
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    ln -sfn "$(realpath -s -m --relative-to="$(dirname "$link")" "$sysroot.tmp$target")" "$link"
  done < <(find "$sysroot.tmp" -type l -lname '/*' -print0)
  rm -rf "$sysroot"
  mv "$sysroot.tmp" "$sysroot"
  { echo "$want"; printf '%s\n' "${debs[@]}"; } >"$stamp"
  step "arm64 sysroot ready (${#debs[@]} packages)"
}

# write_cpuinfo CPU puts an ARM /proc/cpuinfo for CPU into the sysroot.
# qemu 7.2 shows the guest the host's x86 one, on which ONNX Runtime's CPU
# probe crashes at load; with QEMU_LD_PREFIX, qemu opens the sysroot's
# /proc/cpuinfo instead. Values are those of the Raspberry Pi's cores.
write_cpuinfo() {
  local part variant revision features
  case "$1" in
    cortex-a76) part=0xd0b variant=0x4 revision=1
      features="fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp" ;;
    cortex-a72) part=0xd08 variant=0x0 revision=3 features="fp asimd evtstrm crc32 cpuid" ;;
    cortex-a53) part=0xd03 variant=0x0 revision=4 features="fp asimd evtstrm crc32 cpuid" ;;
    *) die "MYNAH_QEMU_CPU=$1: choose cortex-a76 (Pi 5), cortex-a72 (Pi 4) or cortex-a53 (Pi 3)" ;;
  esac
  mkdir -p "$sysroot/proc"
  local n i
  n=$(getconf _NPROCESSORS_CONF)
  for ((i = 0; i < n; i++)); do
    printf 'processor\t: %d\nBogoMIPS\t: 108.00\nFeatures\t: %s\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: %s\nCPU part\t: %s\nCPU revision\t: %d\n\n' \
      "$i" "$features" "$variant" "$part" "$revision"
  done >"$sysroot/proc/cpuinfo"
}

# cross_env is the environment that builds arm64 binaries with cgo. The test
# binaries get it too, for the tests that go build a binary and run it.
cross_env=(
  CGO_ENABLED=1 GOOS=linux GOARCH=arm64
  "CC=aarch64-linux-gnu-gcc --sysroot=$sysroot"
  "PKG_CONFIG_LIBDIR=$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:$sysroot/usr/share/pkgconfig"
  "PKG_CONFIG_SYSROOT_DIR=$sysroot"
)

# The kernel's binfmt_misc entry for arm64 ELF files (from qemu's
# qemu-binfmt-conf.sh), so that an emulated test can exec an arm64 binary:
# its own, to crash a child, or a mynahd it built.
BINFMT=':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64:F'

# binfmt_ns CMD... runs CMD with the arm64 entry registered in a private
# binfmt_misc (Linux 6.7+ gives each user namespace its own), leaving the
# host's alone.
binfmt_ns() {
  unshare --user --map-root-user --mount -- bash -c '
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc &&
      printf "%s" "$0" >/proc/sys/fs/binfmt_misc/register && exec "$@"' "$BINFMT" "$@"
}

# failures prints what a -test.v log says about its failed tests: each
# failed test's output since its "=== RUN", and everything from a crash on.
failures() {
  awk '
    crashed { print; next }
    /^(panic:|fatal error:|SIG[A-Z]+:|qemu: )/ { printf "%s", buf; crashed = 1; print; next }
    /^=== RUN/ { buf = "" }
    /^ *--- FAIL/ { printf "%s", buf; print; buf = ""; next }
    /^ *--- (PASS|SKIP)/ { buf = ""; next }
    /^(FAIL|ok) / { print; next }
    { buf = buf $0 "\n" }
  ' "$1"
}

main() {
  install_packages "${HOST_PACKAGES[@]}"
  check_go
  install_ort arm64 "$cross/ort"
  build_sysroot

  local runner=(binfmt_ns)
  if ! binfmt_ns true 2>/dev/null; then
    step "no private binfmt_misc here (needs Linux 6.7+ and user namespaces): tests that run an arm64 child (cache, cmd/mynahd) will fail"
    runner=()
  fi

  # Packages as the usage names them (audio/voice) or as go names them
  # (./audio/voice, ./..., the module's import path).
  local pkgs=() p
  for p in "$@"; do
    case "$p" in
    ./* | ../* | /* | github.com/*) pkgs+=("$p") ;;
    *) pkgs+=("./$p") ;;
    esac
  done
  [ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
  local -a names dirs
  local listed
  listed=$(cd "$root" && "$GO" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' "${pkgs[@]}") \
    || die "go list ${pkgs[*]} failed"
  mapfile -t names < <(grep . <<<"$listed")
  [ ${#names[@]} -gt 0 ] || die "no package with tests in: ${pkgs[*]}"
  local module
  module=$(cd "$root" && "$GO" list -m)

  local bins="$cross/tests" logs="$cross/logs"
  mkdir -p "$bins" "$logs"
  local -a rows=()
  local failed=0 started=$SECONDS

  # Build every test binary first: a compile error shows in seconds, not
  # after an hour of emulated tests.
  local -A built=()
  local name short bin t0
  for name in "${names[@]}"; do
    short=${name#"$module"/}
    [ "$short" = "$module" ] && short=.
    bin="$bins/${short//\//_}.test"
    t0=$SECONDS
    if (cd "$root" && env "${cross_env[@]}" "$GO" test -c -o "$bin" "$name") >"$logs/${short//\//_}.build.log" 2>&1; then
      built[$short]=$bin
    else
      rows+=("$short|-|build failed|$((SECONDS - t0))")
      failed=1
      step "build of $short failed:"
      tail -n 20 "$logs/${short//\//_}.build.log" >&2
    fi
  done
  step "built ${#built[@]} arm64 test binaries in $((SECONDS - started)) s"

  # run_pkg SHORT CPU runs one test binary in its package directory, as go
  # test would.
  run_pkg() {
    local short=$1 cpu=$2
    local bin=${built[$short]} log="$logs/${short//\//_}.$cpu.log" dir args=(-test.count=1 -test.v "-test.timeout=$timeout")
    dir=$(cd "$root" && "$GO" list -f '{{.Dir}}' "./$short")
    local note=""
    if [ -n "${MYNAH_CROSS_RUN:-}" ]; then
      args+=("-test.run=$MYNAH_CROSS_RUN")
      note=" (only $MYNAH_CROSS_RUN)"
    fi
    if [ -n "${SLOW_TESTS[$short]:-}" ] && [ "${MYNAH_CROSS_SLOW:-0}" != 1 ]; then
      args+=("-test.skip=${SLOW_TESTS[$short]}")
      note=" (left out ${SLOW_TESTS[$short]}; MYNAH_CROSS_SLOW=1 runs it)"
    fi
    write_cpuinfo "$cpu"
    done_runs=$((done_runs + 1))
    local elapsed=$((SECONDS - started))
    step "[$done_runs/$total_runs, $((elapsed / 60)) min $((elapsed % 60)) s] running $short on $cpu"
    local t0=$SECONDS status=passed
    (cd "$dir" && "${runner[@]}" env "${cross_env[@]}" QEMU_LD_PREFIX="$sysroot" QEMU_CPU="$cpu" \
      MYNAH_EMULATED=qemu-aarch64 MYNAH_ORT_LIB="$ort_lib" \
      qemu-aarch64 "$bin" "${args[@]}") >"$log" 2>&1 || status=failed
    rows+=("$short|$cpu|$status$note|$((SECONDS - t0))")
    step "  $short on $cpu: $status in $((SECONDS - t0)) s"
    if [ "$status" = failed ]; then
      failed=1
      step "$short failed on $cpu ($log):"
      failures "$log" | head -n 60 >&2 || true # head may close the pipe early (SIGPIPE under pipefail)
    fi
  }

  # A progress line per package: which, how many of how many, how long
  # so far (a whole run is the better part of an hour).
  local done_runs=0 total_runs=${#built[@]}
  if [ -n "$second_cpu" ] && [ "$second_cpu" != "$cpu" ]; then
    for short in "${SECOND_CPU_PACKAGES[@]}"; do
      [ -n "${built[$short]:-}" ] && total_runs=$((total_runs + 1))
    done
  fi
  for name in "${names[@]}"; do
    short=${name#"$module"/}
    [ -n "${built[$short]:-}" ] && run_pkg "$short" "$cpu"
  done
  if [ -n "$second_cpu" ] && [ "$second_cpu" != "$cpu" ]; then
    for short in "${SECOND_CPU_PACKAGES[@]}"; do
      [ -n "${built[$short]:-}" ] && run_pkg "$short" "$second_cpu"
    done
  fi

  local total=$((SECONDS - started))
  echo
  echo "| package | qemu CPU | result | seconds |"
  echo "|---|---|---|---:|"
  local r
  for r in "${rows[@]}"; do
    IFS='|' read -r short c status secs <<<"$r"
    echo "| $short | $c | $status | $secs |"
  done
  echo
  echo "arm64 under qemu-aarch64: $((total / 60)) min $((total % 60)) s; logs in ${logs#"$root"/}"
  return "$failed"
}

main "$@"
