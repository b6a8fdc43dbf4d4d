# startup.py: what one start of pystitch costs, for two builds side by
# side in alternating runs: `--help` (start and exit), `dump -p` of a
# Python process of several threads (threads.py) (start, attach, one read of every thread,
# exit) and `record -d 0.2` of it; CPU (user + system, the process and
# its children) and wall time per run, medians [min-max].
# usage: python3 bench/startup.py [--base PATH] [--runs 30]
#                                 [--interp PATH]
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import pytargets  # noqa: E402
from tasks import timed  # noqa: E402 (bench/tasks.py: wall, CPU of a run)

NEW = os.path.join(HERE, "..", "pystitch")


def spread(xs):
    return "%.1f [%.1f-%.1f]" % (statistics.median(xs), min(xs), max(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default=None)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--interp", default=None)
    a = ap.parse_args()
    found, _ = pytargets.interpreters()
    local = [i for i in found if not i.rootfs]
    if a.interp:
        local = [pytargets.Interp("given", a.interp, None)]
    if not local:
        sys.exit("startup.py: no local CPython")
    interp = local[-1]
    builds = [("new", NEW)] + ([("base", a.base)] if a.base else [])
    t = pytargets.Target(interp, "threads.py", [])
    try:
        while t.readline().strip() != "ready":
            pass
        cases = [("--help", ["--help"]),
                 ("dump -p", ["dump", "-p", str(t.pid)]),
                 ("record -d 0.2", ["record", "-p", str(t.pid), "-d", "0.2",
                                    "-o", "/tmp/pst-startup.folded", "-f",
                                    "folded"])]
        print("target: %s threads.py (pid %d), %d runs each, alternating"
              % (interp.label, t.pid, a.runs))
        for name, args in cases:
            res = {b: ([], []) for b, _ in builds}
            for _ in range(a.runs):
                for b, path in builds:
                    wall, cpu, _ = timed([path] + args)
                    res[b][0].append(cpu * 1e3)
                    res[b][1].append(wall * 1e3)
            line = "%-14s" % name
            for b, _ in builds:
                line += "  %s: CPU %s ms, wall %s ms" % (
                    b, spread(res[b][0]), spread(res[b][1]))
            print(line)
            sys.stdout.flush()
    finally:
        t.stop()


if __name__ == "__main__":
    main()
