# rate.py: is the rate held when the machine is busy? The counter target
# (tests/targets/counter.py 8 x 30, one core's worth under its GIL) plus
# spinning processes that keep every CPU busy; `record -r RATE` in
# variants run alternately (the same build with and without --realtime,
# and a base build when given): ticks taken of those asked, the share on
# time (at most one period late, from `-v`), the worst lag, and
# pystitch's CPU per tick.
# usage: python3 bench/rate.py [--base PATH] [--rate 1000] [--rounds 3]
#                              [--seconds 5] [--spinners N (default: CPUs)]
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import pytargets  # noqa: E402

NEW = os.path.join(HERE, "..", "pystitch")
TICKS = re.compile(r"ticks: (\d+) of the (\d+) asked, ([\d.]+)% of them on "
                   r"time.*sampling thread: (.*)")
LAG = re.compile(r"(\d+) late ticks, max lag ([\d.]+) ms")
RATE = re.compile(r"the rate was not kept: ([\d.]+) Hz")


def one(pst, pid, rate, seconds, extra):
    cmd = [pst, "record", "-p", str(pid), "-r", str(rate), "-d",
           str(seconds), "-v", "-f", "folded", "-o", "/tmp/pst-rate.folded"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd + extra, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    err = r.stderr.decode(errors="replace")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                before.ru_stime)
    lag = LAG.search(err)
    m = TICKS.search(err)
    if not m or not lag:  # an older build: ticks from the warning, if any
        got = RATE.search(err)
        ticks = float(got.group(1)) * seconds if got else rate * seconds
        return {"taken": ticks / (rate * seconds), "on_time": None,
                "lag": float(lag.group(2)) if lag else 0,
                "cpu_us": cpu / ticks * 1e6, "sched": "?"}
    ticks, asked = int(m.group(1)), int(m.group(2))
    return {"taken": ticks / float(asked), "on_time": float(m.group(3)) / 100,
            "lag": float(lag.group(2)), "cpu_us": cpu / ticks * 1e6,
            "sched": m.group(4)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default=None)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--spinners", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--interp", default="/root/.pyenv/versions/3.12.1/bin/"
                    "python3.12")
    a = ap.parse_args()
    variants = [("default", NEW, []), ("--realtime", NEW, ["--realtime"])]
    if a.base:
        variants.insert(0, ("base", a.base, []))
    t = pytargets.Target(pytargets.Interp("bench", a.interp), "counter.py",
                         ["8", "30"])
    spin = [subprocess.Popen([a.interp, "-c", "while 1: pass"])
            for _ in range(a.spinners)]
    try:
        t.readline()
        res = {name: [] for name, _, _ in variants}
        for _ in range(a.rounds):
            for name, pst, extra in variants:
                res[name].append(one(pst, t.pid, a.rate, a.seconds, extra))
        print("%d Hz, target + %d spinning processes on %d CPUs, %d rounds "
              "of %.0f s (median [min-max]):" % (a.rate, a.spinners,
                                                 os.cpu_count(), a.rounds,
                                                 a.seconds))
        for name, _, _ in variants:
            rs = res[name]

            def f(k, scale=1.0, fmt="%.1f"):
                xs = [r[k] * scale for r in rs if r[k] is not None]
                if not xs:
                    return "n/a"
                return (fmt + " [" + fmt + "-" + fmt + "]") % (
                    statistics.median(xs), min(xs), max(xs))
            print("  %-11s taken %s%%  on time %s%%  max lag %s ms  "
                  "CPU %s us/tick  (%s)" % (
                      name, f("taken", 100), f("on_time", 100), f("lag"),
                      f("cpu_us"), rs[0]["sched"]))
    finally:
        for p in spin:
            p.kill()
        t.stop()


if __name__ == "__main__":
    main()
