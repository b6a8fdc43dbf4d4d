#!/bin/sh
# capture-fixtures.sh: regenerates the frame-walker replay fixtures
# (tests/fixtures/frames-*.txt, read by tests/unit/test-frame-replay.c) from
# live processes: tests/targets/parked.py under each interpreter below,
# captured once parked by tests/helpers/capture-image (built by make check).
#
# usage: tools/capture-fixtures.sh [BUILDDIR]   (as root; BUILDDIR defaults
#        to the source tree). The script runs from /tmp/pst-fixture (inside
#        the rootfs for a container interpreter), so every fixture names the
#        same file whatever the checkout.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top}
capture=$build/tests/helpers/capture-image
rootfs_dir=${PST_ROOTFS_DIR:-/var/cache/pystitch}
out=$top/tests/fixtures
[ -x "$capture" ] || { echo "no $capture: run make check first" >&2; exit 1; }

# name  interpreter  rootfs (- for the host). Keep in step with the FIXTURES
# list of tests/unit/test-frame-replay.c.
fixtures="
py27 /root/.pyenv/versions/2.7.18/bin/python2.7 -
py310 /root/.pyenv/versions/3.10.13/bin/python3.10 -
py312 /root/.pyenv/versions/3.12.1/bin/python3.12 -
py314 /usr/bin/python3.14 $rootfs_dir/sid-rootfs
"

tmp=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || :
  rm -rf "$tmp"
}
trap cleanup EXIT

# Prints the pid of the first child of $1 (the target inside unshare).
child_of() {
  for _ in $(seq 100); do
    kids=$(cat "/proc/$1/task/$1/children" 2>/dev/null || :)
    [ -n "$kids" ] && { echo "${kids%% *}"; return 0; }
    sleep 0.05
  done
  return 1
}

while read -r name exe rootfs; do
  [ -n "$name" ] || continue
  root=${rootfs#-}
  [ -x "$root$exe" ] || { echo "$name: $root$exe missing" >&2; exit 1; }
  mkdir -p "$root/tmp/pst-fixture"
  cp "$top/tests/targets/parked.py" "$root/tmp/pst-fixture/parked.py"
  log=$tmp/$name.out
  script=/tmp/pst-fixture/parked.py
  if [ -z "$root" ]; then
    (cd /tmp/pst-fixture && exec "$exe" -u $script) >"$log" 2>&1 &
    pid=$!
    target=$pid
  else
    unshare --pid --mount --fork chroot "$root" /bin/sh -c \
      "cd /tmp/pst-fixture && exec $exe -u $script" >"$log" 2>&1 &
    pid=$!
    target=$(child_of "$pid")
  fi
  for _ in $(seq 200); do
    grep -q '^ready' "$log" && break
    sleep 0.05
  done
  grep -q '^ready' "$log" ||
    { echo "$name: not ready:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.2 # into the sleep proper
  "$capture" "$target" "$out/frames-$name.txt" \
    "tests/targets/parked.py parked in time.sleep"
  kill -9 "$pid" "$target" 2>/dev/null || :
  wait "$pid" 2>/dev/null || :
  pid=
  rm -rf "$root/tmp/pst-fixture"
  echo "$name: $(wc -c <"$out/frames-$name.txt") bytes"
done <<END
$fixtures
END
