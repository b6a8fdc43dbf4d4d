#!/bin/sh
# run.sh: runs every test (unit runner, integration suites) from the build
# directory, then lint, fuzzing and the sanitizer build (unless
# PST_QUICK=1), and prints one last line: "N passed, M failed, K skipped".
# Arguments name the suites to run (a part of the name is enough, as with
# the unit runner): tests/run.sh dump native  runs test_dump and
# test_native only; unit, lint, fuzz and asan are suites too.
set -u
wanted="$*"
top=$(cd "$(dirname "$0")/.." && pwd)
build=${PST_BUILDDIR:-$top}
export PST_BUILDDIR=$build PST_SRCDIR=$top PST=$build/pystitch
pass=0 fail=0 skip=0
log=$(mktemp)

# Is suite $1 asked for? All are when no names were given.
wanted_suite() {
  [ -z "$wanted" ] && return 0
  for w in $wanted; do
    case "$1" in *"$w"*) return 0 ;; esac
  done
  return 1
}

suite() {
  script=$1
  for a in "$@"; do
    case "$a" in */*) script=$a ;; esac
  done
  wanted_suite "$(basename "$(dirname "$script")")/$(basename "$script")" ||
    return 0
  echo "== $*"
  t0=$(date +%s)
  "$@" 2>&1 | tee "$log"
  echo "# $(($(date +%s) - t0)) s"
  set -- $(tail -n 1 "$log" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p')
  if [ $# -eq 3 ]; then
    pass=$((pass + $1)) fail=$((fail + $2)) skip=$((skip + $3))
  else
    echo "not ok - suite ended without a summary line"
    fail=$((fail + 1))
  fi
}

suite "$build/tests/unit/run-unit"
suite python3 "$top/tests/integration/test_dump.py"
suite python3 "$top/tests/integration/test_errors.py"
suite python3 "$top/tests/integration/test_record.py"
suite python3 "$top/tests/integration/test_top.py"
suite python3 "$top/tests/integration/test_native.py"
suite python3 "$top/tests/integration/test_faults.py"
suite python3 "$top/tests/integration/test_push.py"
suite python3 "$top/tests/integration/test_apps.py"
suite python3 "$top/tests/integration/test_hostile.py"
suite python3 "$top/tests/integration/test_figures.py"
# The packages (static program, wheel, .deb, tarball): not again in the
# sanitizer rerun (tests/asan.sh sets PST_NO_PACKAGES), they test the build.
if [ -z "${PST_NO_PACKAGES:-}" ]; then
  suite python3 "$top/tests/integration/test_static.py"
  suite python3 "$top/tests/integration/test_packages.py"
fi
# Whole-tree checks, skipped with PST_QUICK=1 (as in the sanitizer rerun,
# tests/asan.sh): static analysis, each fuzz harness for PST_FUZZ_SECONDS
# (default 60, as issue 5 asks), and every suite above again on an ASan/UBSan build.
if [ -z "${PST_QUICK:-}" ]; then
  suite "$top/tools/lint.sh"
  suite "$top/fuzz/run.sh" -t "${PST_FUZZ_SECONDS:-60}"
  suite "$top/tests/asan.sh"
fi
rm -f "$log"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
