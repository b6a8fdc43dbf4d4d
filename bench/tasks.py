# tasks.py: the cost of --async (CPython 3.8+) on tests/targets/tasks.py
# (20 waiting tasks, chains up to 4 tasks deep): wall and CPU time of
# `dump` against `dump --async` (alternating runs, medians), the
# process_vm_readv calls each makes (strace -c), and pystitch's CPU per
# task-sample in `record --async` against `record --idle` alone.
# usage: PST_PYTHONS=container-3.14 python3 bench/tasks.py [--repeat 20]
#                                                          [--seconds 5]
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import pytargets  # noqa: E402

PST = os.path.join(HERE, "..", "pystitch")


def timed(cmd):
    """(wall s, child CPU s, stderr) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit("%s: exit %d: %s" % (cmd, r.returncode, r.stderr))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                before.ru_stime)
    return wall, cpu, r.stderr.decode(errors="replace")


def vm_reads(cmd):
    r = subprocess.run(["strace", "-f", "-c", "-e", "trace=process_vm_readv"]
                       + cmd, capture_output=True)
    # "% time  seconds  usecs/call  calls  [errors]  syscall"
    for line in r.stderr.decode(errors="replace").splitlines():
        f = line.split()
        if f and f[-1] == "process_vm_readv" and len(f) >= 5:
            return int(f[3])
    return -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=5)
    a = ap.parse_args()
    found, _ = pytargets.interpreters()
    for interp in found:
        t = pytargets.Target(interp, "tasks.py")
        try:
            while t.readline().strip() != "ready":
                pass
            pid = str(t.pid)
            runs = {"dump": [], "dump --async": []}
            for _ in range(a.repeat):
                for k in runs:
                    runs[k].append(timed([PST] + k.split() + ["-p", pid]))
            print("%s, 20 tasks:" % interp.label)
            for k, v in runs.items():
                print("  %-14s wall %6.2f ms  cpu %6.2f ms  process_vm_readv "
                      "%d" % (k, 1e3 * statistics.median(x[0] for x in v),
                              1e3 * statistics.median(x[1] for x in v),
                              vm_reads([PST] + k.split() + ["-p", pid])))
            cpu = {}
            for k in ("--idle", "--idle --async"):
                _, c, err = timed([PST, "record", "-p", pid, "-r", "100",
                                   "-d", str(a.seconds), "-f", "folded",
                                   "-o", "/tmp/pst-bench-tasks.folded"]
                                  + k.split())
                m = re.search(r"--async: (\d+) task samples", err)
                cpu[k] = (c, int(m.group(1)) if m else 0)
            extra = cpu["--idle --async"][0] - cpu["--idle"][0]
            n = cpu["--idle --async"][1]
            print("  record 100 Hz %.0f s: CPU %.3f s threads only, %.3f s "
                  "with --async: %d task samples, %.1f us each"
                  % (a.seconds, cpu["--idle"][0], cpu["--idle --async"][0],
                     n, 1e6 * extra / n if n else 0))
        finally:
            t.stop()


if __name__ == "__main__":
    main()
