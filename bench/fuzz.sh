#!/bin/sh
# fuzz.sh: the long fuzzing runs behind docs/reliability.md ("Fuzzing"):
# each harness for SECONDS (default 600), one after the other, growing the
# working corpora in fuzz/build/corpus/ (kept between runs), then a table
# of executions, executions per second, coverage and corpus size per
# harness. Crashes are reported as by fuzz/run.sh (input kept in
# fuzz/build/artifacts/).
# usage: bench/fuzz.sh [SECONDS] [HARNESS...]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
out=${PST_FUZZ_BUILDDIR:-$top/fuzz/build}
secs=${1:-600}
[ $# -gt 0 ] && shift
"$top/fuzz/run.sh" -t "$secs" "$@"
rc=$?
echo
printf '%-22s %12s %8s %8s %8s\n' harness executions exec/s coverage corpus
for log in "$out"/fuzz_*.log; do
  h=$(basename "$log" .log)
  [ $# -gt 0 ] && ! echo " $* " | grep -q " $h " && continue
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov=$(sed -n 's/^#[0-9]*.*DONE *cov: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  corp=$(ls "$out/corpus/${h#fuzz_}" 2>/dev/null | wc -l)
  printf '%-22s %12s %8s %8s %8s\n' "$h" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "$corp"
done
exit $rc
