#!/usr/bin/env bash
# install.sh installs mynahd as a systemd service. Run `make build` first.
#
#   sudo scripts/install.sh              install (or upgrade) under /usr/local
#   sudo scripts/install.sh --uninstall  remove binaries, library and unit
#
# Options:
#   --prefix DIR    install root for bin/ and lib/mynah/ (default /usr/local);
#                   the unit is rewritten to match
#   --bin-dir DIR   where the built mynahd and mynah are (default: bin/)
#   --ort-lib FILE  libonnxruntime to install (default: .ort/libonnxruntime.so.1)
#   --uninstall     remove what install put there; keeps /etc/mynah (your
#                   config) and /var/lib/mynah (voices)
# Environment:
#   DESTDIR         stage everything under this directory instead of /
#                   (packaging, tests); systemctl is not run then
#
# It is idempotent: binaries, library and unit are replaced, the config in
# /etc/mynah/mynahd.yaml is written only when there is none.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
prefix=/usr/local
bin_dir="$root/bin"
ort_lib="$root/.ort/libonnxruntime.so.1"
uninstall=0
destdir=${DESTDIR:-}
cmdline="$0 $*"

die() { echo "install: $*" >&2; exit 1; }
say() { echo "install: $*"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix=$2; shift ;;
    --prefix=*) prefix=${1#*=} ;;
    --bin-dir) [ $# -ge 2 ] || die "--bin-dir needs a directory"; bin_dir=$2; shift ;;
    --bin-dir=*) bin_dir=${1#*=} ;;
    --ort-lib) [ $# -ge 2 ] || die "--ort-lib needs a file"; ort_lib=$2; shift ;;
    --ort-lib=*) ort_lib=${1#*=} ;;
    --uninstall) uninstall=1 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (try --help)" ;;
  esac
  shift
done

case "$prefix" in
  /*) ;;
  *) die "--prefix must be an absolute path, not $prefix" ;;
esac
prefix=${prefix%/}
[ -n "$prefix" ] || die "--prefix / is not supported; use /usr or /usr/local"
case "$prefix" in
  *[!A-Za-z0-9/._-]*) die "--prefix $prefix: use only letters, digits and / . _ -" ;;
esac

bindir="$destdir$prefix/bin"
libdir="$destdir$prefix/lib/mynah"
unitdir="$destdir/etc/systemd/system"
confdir="$destdir/etc/mynah"
unit="$unitdir/mynahd.service"
conf="$confdir/mynahd.yaml"

if [ -z "$destdir" ] && [ "$(id -u)" -ne 0 ]; then
  die "run as root (sudo $cmdline), or set DESTDIR to stage the files elsewhere"
fi

# systemd_running: systemctl only makes sense on the real root of a machine
# booted with systemd (not in a container without it, not for DESTDIR).
systemd_running() {
  [ -z "$destdir" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null
}

if [ "$uninstall" -eq 1 ]; then
  if systemd_running; then
    systemctl disable --now mynahd.service 2>/dev/null || true
  fi
  rm -f "$bindir/mynahd" "$bindir/mynah" "$unit"
  rm -rf "$libdir"
  if systemd_running; then
    systemctl daemon-reload
  fi
  say "removed mynahd, mynah, $prefix/lib/mynah and the unit"
  say "kept /etc/mynah (your config) and /var/lib/mynah, /var/cache/mynah (voices, cache); remove them by hand if you want"
  exit 0
fi

for b in mynahd mynah; do
  [ -x "$bin_dir/$b" ] || die "$bin_dir/$b not found: run 'make build' first"
done
[ -f "$ort_lib" ] || die "$ort_lib not found: run 'make setup' (scripts/setup.sh) first, or pass --ort-lib"
[ -f "$root/systemd/mynahd.service" ] || die "$root/systemd/mynahd.service missing from the source tree"
[ -f "$root/systemd/mynahd.yaml" ] || die "$root/systemd/mynahd.yaml missing from the source tree"

install -d -m 0755 "$bindir" "$libdir" "$unitdir" "$confdir"
# Install to a temporary name, then rename: replacing a running binary in
# place would fail with "text file busy"; a rename is atomic.
install -m 0755 "$bin_dir/mynahd" "$bindir/.mynahd.new" && mv -f "$bindir/.mynahd.new" "$bindir/mynahd"
install -m 0755 "$bin_dir/mynah" "$bindir/.mynah.new" && mv -f "$bindir/.mynah.new" "$bindir/mynah"
install -m 0644 "$ort_lib" "$libdir/.libonnxruntime.so.1.new" && mv -f "$libdir/.libonnxruntime.so.1.new" "$libdir/libonnxruntime.so.1"
say "installed $prefix/bin/mynahd, $prefix/bin/mynah, $prefix/lib/mynah/libonnxruntime.so.1"

# The unit names /usr/local; another prefix rewrites those paths.
sed "s|/usr/local/|$prefix/|g" "$root/systemd/mynahd.service" >"$unit.new"
chmod 0644 "$unit.new"
mv -f "$unit.new" "$unit"
say "installed /etc/systemd/system/mynahd.service"

if [ -e "$conf" ]; then
  say "kept your /etc/mynah/mynahd.yaml (the current example is $root/systemd/mynahd.yaml)"
else
  # 0644: the service's dynamic user must read it; secrets never go in it
  # (see password_file).
  install -m 0644 "$root/systemd/mynahd.yaml" "$conf"
  say "installed /etc/mynah/mynahd.yaml (every setting documented; defaults work as they are)"
fi

if ! getent group audio >/dev/null 2>&1 && [ -z "$destdir" ]; then
  say "warning: there is no 'audio' group; the unit's SupplementaryGroups=audio will fail. Create it (groupadd -r audio) or remove that line with 'systemctl edit mynahd'"
fi

if systemd_running; then
  systemctl daemon-reload
  say "systemd reloaded. Start mynahd now and at every boot with:"
  say "  systemctl enable --now mynahd"
  if systemctl is-active --quiet mynahd.service; then
    say "mynahd is running the old version; restart it with: systemctl restart mynahd"
  fi
  say "check it with: systemctl status mynahd; journalctl -u mynahd -f"
elif [ -n "$destdir" ]; then
  say "DESTDIR is set: staged under $destdir; systemctl not run"
else
  say "systemd is not running here (a container?): systemctl not run."
  say "Start the daemon by hand: $prefix/bin/mynahd -config /etc/mynah/mynahd.yaml"
fi
