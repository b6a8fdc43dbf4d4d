#!/bin/sh
# asan.sh: builds pystitch, its unit tests and helpers with
# --enable-sanitizers (ASan + UBSan) in build-asan/ and runs the unit and
# integration suites against that build (tests/run.sh with PST_BUILDDIR;
# PST_QUICK=1 so that lint, fuzzing and this script do not run again).
# Prints the suites' TAP lines, one more test for the build and one for
# the sanitizer logs, and the summary line tests/run.sh adds up.
#
# Sanitizers: every finding halts the process (halt_on_error=1, UBSan
# included) with exit code 86, so that no test can take it for one of
# pystitch's own exit codes, and is also written to build-asan/san/, which
# must be empty after the run: a finding in a process whose exit status no
# test checks still fails.
#
# A VPATH build needs a source tree that is not configured in place; when
# it is (the usual `./configure && make`), the sources listed by git are
# copied to build-asan/src first (mtimes kept, so rebuilds stay
# incremental) and built from there.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
b=${PST_ASAN_BUILDDIR:-$top/build-asan}
jobs=${PST_JOBS:-2}
mkdir -p "$b"
log=$b/build.log

fail_build() {
  echo "not ok 1 - asan build: $1"
  tail -n 30 "$log" | sed 's/^/#   /'
  echo "0 passed, 1 failed, 0 skipped"
  exit 1
}

start=$(date +%s)
src=$top
if [ -f "$top/config.status" ]; then
  command -v git >/dev/null && git -C "$top" rev-parse >/dev/null 2>&1 ||
    { echo "ok 1 - asan build # SKIP tree configured in place, not in git"
      echo "0 passed, 0 failed, 1 skipped"; exit 0; }
  src=$b/src
  mkdir -p "$src"
  (cd "$top" && git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null) |
    tar -C "$src" -xpf - || fail_build "copy"
fi
: >"$log"
if [ ! -x "$src/configure" ]; then
  (cd "$src" && autoreconf -fi) >>"$log" 2>&1 || fail_build "autoreconf"
fi
mkdir -p "$b/obj"
if [ ! -f "$b/obj/Makefile" ]; then
  (cd "$b/obj" && "$src/configure" --enable-werror --enable-sanitizers) \
    >>"$log" 2>&1 || fail_build "configure"
fi
(cd "$b/obj" && make -j"$jobs" && make -j"$jobs" check TESTS=) \
  >>"$log" 2>&1 || fail_build "make"
built=$(($(date +%s) - start))

rm -rf "$b/san"
mkdir -p "$b/san"
opts="halt_on_error=1:exitcode=86:log_path=$b/san/report:print_stacktrace=1"
export ASAN_OPTIONS="$opts:detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="$opts"
export LSAN_OPTIONS="exitcode=86:log_path=$b/san/report"
out=$(mktemp)
PST_QUICK=1 PST_NO_PACKAGES=1 PST_BUILDDIR="$b/obj" "$top/tests/run.sh" |
  tee "$out"
unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
set -- $(tail -n 1 "$out" |
  sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p')
rm -f "$out"
[ $# -eq 3 ] || set -- 0 1 0
pass=$1 fail=$2 skip=$3
took=$(($(date +%s) - start))
echo "ok - asan build: ${built} s (whole asan stage ${took} s)"
pass=$((pass + 1))
if [ -n "$(ls -A "$b/san")" ]; then
  echo "not ok - sanitizer reports in $b/san:"
  cat "$b"/san/* | grep -E 'ERROR|runtime error|SUMMARY|#[0-9] ' |
    head -n 60 | sed 's/^/#   /'
  fail=$((fail + 1))
else
  echo "ok - no sanitizer reports"
  pass=$((pass + 1))
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
