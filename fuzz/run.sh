#!/bin/sh
# fuzz/run.sh: builds the libFuzzer harnesses (fuzz/build.sh) and runs each
# for a time budget or a number of runs, PST_FUZZ_JOBS at a time (default:
# the number of CPUs), on its seed corpus (fuzz/corpus/NAME, read only) plus a working corpus that grows
# across runs (BUILD/corpus/NAME). Prints one TAP line per harness with its
# executions, then the line tests/run.sh adds up: "N passed, M failed, K
# skipped". A crash, leak, sanitizer report, timeout (-timeout, 10 s per
# input) or out-of-memory fails the harness; the input is kept in
# BUILD/artifacts/ and the report's first lines are printed.
# usage: fuzz/run.sh [-t SECONDS | -r RUNS] [-j JOBS] [HARNESS...]
#   -t SECONDS  time per harness (default 60; $PST_FUZZ_SECONDS)
#   -r RUNS     a number of inputs per harness instead (-runs=)
#   -j JOBS     harnesses run at once (default: CPUs; $PST_FUZZ_JOBS)
#   HARNESS     fuzz_elf fuzz_lines fuzz_disasm_x86_64 fuzz_disasm_aarch64
#               fuzz_frame fuzz_writers fuzz_proc fuzz_symtab fuzz_pyimage
#               fuzz_tsd fuzz_origin fuzz_analyse
#               (default: all)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
out=${PST_FUZZ_BUILDDIR:-$top/fuzz/build}
secs=${PST_FUZZ_SECONDS:-60}
jobs=${PST_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
runs=
while getopts t:r:j: opt; do
  case $opt in
  t) secs=$OPTARG ;;
  r) runs=$OPTARG ;;
  j) jobs=$OPTARG ;;
  *) echo "usage: fuzz/run.sh [-t SECONDS | -r RUNS] [-j JOBS] [HARNESS...]" >&2
     exit 2 ;;
  esac
done
shift $((OPTIND - 1))
harnesses=${*:-fuzz_elf fuzz_lines fuzz_disasm_x86_64 fuzz_disasm_aarch64 \
fuzz_frame fuzz_writers fuzz_proc fuzz_symtab fuzz_pyimage fuzz_tsd \
fuzz_origin fuzz_analyse}
pass=0 fail=0 skip=0 n=0

"$top/fuzz/build.sh" >"$out.build.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
  for h in $harnesses; do
    n=$((n + 1))
    if [ $rc -eq 77 ]; then
      skip=$((skip + 1))
      echo "ok $n - $h # SKIP $(tail -n 1 "$out.build.log")"
    else
      fail=$((fail + 1))
      echo "not ok $n - $h: fuzz/build.sh failed"
      tail -n 20 "$out.build.log" | sed 's/^/#   /'
    fi
  done
  echo "$pass passed, $fail failed, $skip skipped"
  [ "$fail" -eq 0 ]
  exit
fi
rm -f "$out.build.log"

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# run_one HARNESS: fuzzes one harness and writes its TAP line's verdict and
# text to $out/HARNESS.result ("ok ..." or "not ok ..." plus comment lines).
run_one() {
  h=$1
  name=${h#fuzz_}
  mkdir -p "$out/corpus/$name" "$out/artifacts"
  log="$out/$h.log"
  set -- -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$h-"
  dict=$top/fuzz/dict/$name.dict
  [ -f "$dict" ] && set -- "$@" -dict="$dict"
  if [ -n "$runs" ]; then
    set -- "$@" -runs="$runs"
  else
    set -- "$@" -max_total_time="$secs"
  fi
  start=$(date +%s)
  "$out/$h" "$@" "$out/corpus/$name" "$top/fuzz/corpus/$name" >"$log" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(sed -n 's/^#[0-9]*.*DONE *cov: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  if [ $rc -eq 0 ]; then
    echo "ok - $h: ${execs:-?} executions in ${took} s, coverage ${cov:-?}"
  else
    echo "not ok - $h: exit $rc after ${execs:-?} executions in ${took} s"
    grep -m 1 -A 12 -E 'ERROR: |runtime error|SUMMARY|ALARM|out-of-memory' \
      "$log" | sed 's/^/#   /'
    grep -m 1 'Test unit written to' "$log" | sed 's/^/#   /'
    echo "#   reproduce: $out/$h <that file>; full log: $log"
  fi >"$out/$h.result"
}

# At most $jobs harnesses at once; each runs in a subshell of its own.
running=0
for h in $harnesses; do
  if [ "$running" -ge "$jobs" ]; then
    wait
    running=0
  fi
  rm -f "$out/$h.result"
  run_one "$h" &
  running=$((running + 1))
done
wait
for h in $harnesses; do
  n=$((n + 1))
  if [ ! -f "$out/$h.result" ]; then
    fail=$((fail + 1))
    echo "not ok $n - $h: no result (the harness's run was killed)"
    continue
  fi
  case $(head -n 1 "$out/$h.result") in
  ok*) pass=$((pass + 1)) ;;
  *) fail=$((fail + 1)) ;;
  esac
  sed "1s/^\(ok\|not ok\) - /\1 $n - /" "$out/$h.result"
done
echo "1..$n"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
