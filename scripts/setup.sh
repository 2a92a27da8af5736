#!/usr/bin/env bash
# setup.sh installs what mynah needs to build, run and test, and nothing more.
# It is idempotent: a second run checks and returns in about a second.
#
#   scripts/setup.sh            system packages + ONNX Runtime
#   scripts/setup.sh --no-apt   only ONNX Runtime (packages installed by hand)
#
# ONNX Runtime comes from the onnxruntime-node package of the npm registry:
# its tarball carries a plain CPU build of libonnxruntime.so.1 for linux x64
# and arm64. We pin the tarball's sha256 and extract just that one file into
# .ort/ in the project (ignored by git). Jetson users with a CUDA build point
# MYNAH_ORT_LIB or the config's ort_lib at it instead.
#
# Sourced (scripts/cross-test.sh does), it only defines its functions.
set -euo pipefail

ORT_VERSION=1.30.0
ORT_TGZ_SHA256=6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75
PACKAGES=(build-essential pkg-config portaudio19-dev libespeak-ng-dev espeak-ng-data python3-jinja2
  mosquitto mosquitto-clients sox alsa-utils libasound2-plugins)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Messages name the script the user ran: setup or cross-test.
prog=$(basename "$0" .sh)

die() { echo "$prog: $*" >&2; exit 1; }
step() { echo "$prog: $*" >&2; }

# install_packages PKG... installs those of the Debian packages that are
# missing, with sudo when not root.
install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "apt-get not found; install these packages by hand: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "not root and no sudo; install as root: apt-get install ${missing[*]}"
    sudo=(sudo)
  fi
  step "installing ${missing[*]}"
  "${sudo[@]}" apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install failed for: ${missing[*]}"
}

check_go() {
  command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || die "Go 1.26 or newer is needed (https://go.dev/doc/install); apt's golang is too old on Debian 12"
}

# ort_arch prints onnxruntime-node's name for this machine's architecture.
ort_arch() {
  case "$(uname -m)" in
    x86_64|amd64) echo x64 ;;
    aarch64|arm64) echo arm64 ;;
    *) die "no ONNX Runtime build for $(uname -m) in onnxruntime-node; set MYNAH_ORT_LIB to your own libonnxruntime.so" ;;
  esac
}

# install_ort ARCH DIR puts the pinned libonnxruntime.so.1 for linux/ARCH
# (x64 or arm64) into DIR.
install_ort() {
  local arch=$1 ort_dir=$2
  local lib="$ort_dir/libonnxruntime.so.1" stamp="$ort_dir/VERSION"
  if [ -f "$lib" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$ORT_VERSION $arch" ]; then
    return 0
  fi
  command -v npm >/dev/null || die "npm is needed to fetch ONNX Runtime (apt-get install npm)"
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"; trap - RETURN' RETURN
  step "fetching onnxruntime-node@$ORT_VERSION (about 110 MB)"
  (cd "$tmp" && npm pack --silent "onnxruntime-node@$ORT_VERSION" >/dev/null) \
    || die "npm pack onnxruntime-node@$ORT_VERSION failed (is the npm registry reachable?)"
  local tgz="$tmp/onnxruntime-node-$ORT_VERSION.tgz"
  [ -f "$tgz" ] || die "npm pack did not produce $(basename "$tgz")"
  local got
  got=$(sha256sum "$tgz" | cut -d' ' -f1)
  [ "$got" = "$ORT_TGZ_SHA256" ] || die "onnxruntime-node-$ORT_VERSION.tgz has sha256 $got, expected $ORT_TGZ_SHA256; refusing to use it"
  tar -xzf "$tgz" -C "$tmp" "package/bin/napi-v6/linux/$arch/libonnxruntime.so.1" \
    || die "libonnxruntime.so.1 for linux/$arch is not in the tarball"
  mkdir -p "$ort_dir"
  install -m 0644 "$tmp/package/bin/napi-v6/linux/$arch/libonnxruntime.so.1" "$lib.tmp"
  mv "$lib.tmp" "$lib"
  echo "$ORT_VERSION $arch" >"$stamp"
  step "ONNX Runtime $ORT_VERSION ($arch) is in $ort_dir"
}

main() {
  local want_apt=1
  for a in "$@"; do
    case "$a" in
      --no-apt) want_apt=0 ;;
      -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
      *) die "unknown argument $a (try --help)" ;;
    esac
  done
  if [ "$want_apt" = 1 ]; then
    local pkgs=("${PACKAGES[@]}")
    # npm may come with a Node.js that was not installed by apt; only a
    # missing npm command asks apt for Debian's.
    command -v npm >/dev/null || pkgs+=(npm)
    install_packages "${pkgs[@]}"
  fi
  check_go
  install_ort "$(ort_arch)" "$root/.ort"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi
