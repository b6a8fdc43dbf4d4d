# top.py: pystitch's CPU for `top` against `record` at the same rate on the
# same target, in alternating runs (the machine's noise hits both alike):
# the 8-thread counter target (tests/targets/counter.py, 30 frames deep).
# top prints a table every second to a pipe that is read and dropped.
# usage: python3 bench/top.py [--rate 100] [--rounds 5] [--seconds 10]
#                             [--interp PATH] [--idle]
import argparse
import os
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import pytargets  # noqa: E402

PST = os.path.join(HERE, "..", "pystitch")


def cpu_of(cmd):
    """CPU seconds (user + system) of one run of cmd."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + \
        (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--interp",
                    default="/root/.pyenv/versions/3.12.1/bin/python3.12")
    ap.add_argument("--idle", action="store_true")
    a = ap.parse_args()
    t = pytargets.Target(pytargets.Interp("bench", a.interp), "counter.py",
                         ["8", "30"])
    extra = ["--idle"] if a.idle else []
    common = ["-p", str(t.pid), "-r", str(a.rate), "-d", str(a.seconds)]
    rec, top = [], []
    try:
        t.readline()
        for _ in range(a.rounds):
            rec.append(cpu_of([PST, "record"] + common + extra +
                              ["-f", "folded", "-o", "/tmp/pst-top.folded"]))
            top.append(cpu_of([PST, "top"] + common + extra +
                              ["--delay", "1"]))
    finally:
        t.stop()
    r, p = statistics.median(rec), statistics.median(top)
    print("%d rounds of %.0f s at %.0f Hz%s, 8-thread counter, %s" % (
        a.rounds, a.seconds, a.rate, " --idle" if a.idle else "", a.interp))
    print("record: median %.3f s CPU (%.2f%% of a core)  runs %s" % (
        r, 100 * r / a.seconds, " ".join("%.3f" % x for x in rec)))
    print("top:    median %.3f s CPU (%.2f%% of a core)  runs %s" % (
        p, 100 * p / a.seconds, " ".join("%.3f" % x for x in top)))
    print("top / record: %.3f" % (p / r))


if __name__ == "__main__":
    main()
