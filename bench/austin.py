# austin.py: pystitch and Debian's `austin` (1.0.1: CPython 2.7, 3.6-3.9)
# side by side, on the same target in the same run, for each interpreter
# both can read:
#   cpu      profiler CPU time per thread-sample (tests/targets/counter.py:
#            8 CPU-bound threads + main, 30-frame stacks), each tool
#            recording the same seconds at the same rate in turn;
#   slowdown target throughput with the profiler sampling vs SIGSTOPped
#            in alternating windows (median of pair ratios, as record.py);
#   wrong    stacks written that cannot exist (tests/targets/callstorm.py:
#            only top, top;mid, top;mid;leaf are possible) and samples
#            flagged invalid or dropped as torn.
# usage: python3 bench/austin.py [--seconds 4] [--rate 1000] [--rounds 8]
#        (apt-get install austin first; interpreters from pytargets)
import argparse
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.path.insert(0, HERE)
import pytargets  # noqa: E402
import record as rec  # noqa: E402

PST = os.path.join(HERE, "..", "pystitch")
AUSTIN = shutil.which("austin")
OUT = "/tmp/pst-austin-bench.out"
THREADS = 9  # counter.py: 8 workers and the main thread


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def command(tool, pid, rate, extra=()):
    if tool == "pystitch":
        return [PST, "record", "-p", str(pid), "-r", str(rate), "-d",
                "3600", "-f", "folded", "-o", OUT, "--idle"] + list(extra)
    return [AUSTIN, "-i", str(int(1e6 / rate)), "-p", str(pid), "-o", OUT]


def run_for(tool, pid, rate, seconds, extra=()):
    """Runs tool for `seconds`, stops it with SIGINT; returns (cpu s,
    ticks or thread-samples, invalid, stderr)."""
    c0 = children_cpu()
    p = subprocess.Popen(command(tool, pid, rate, extra),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(seconds)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate()
    err = err.decode("utf-8", "replace")
    cpu = children_cpu() - c0
    if tool == "pystitch":
        m = re.search(r"wrote .*?: (\d+) samples", err)
        e = re.search(r"(\d+) errors \(", err)
        return (cpu, int(m.group(1)) if m else 0,
                int(e.group(1)) if e else -1, err)
    m = re.search(r"Long sampling rate : \d+/(\d+)", err)
    e = re.search(r"Error rate : (\d+)/(\d+)", err)
    ticks = int(m.group(1)) if m else 0
    return (cpu, ticks * THREADS, int(e.group(1)) if e else -1, err)


def stacks(tool):
    """(names list, count) per line of the tool's collapsed output."""
    with open(OUT, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            stack, _, count = line.rpartition(" ")
            names = [s.split(" (")[0].split(".")[-1]
                     for s in stack.split(";")]
            if tool == "austin":
                names = [n for n in names if not re.match(r"^L\d+$", n)]
            try:
                yield names, int(count)
            except ValueError:
                continue


def wrong_stacks(tool, interp, rate, seconds):
    t = pytargets.Target(interp, "callstorm.py")
    try:
        while t.readline().strip() != "ready":
            pass
        cpu, samples, invalid, err = run_for(tool, t.pid, rate, seconds)
        wrong = total = 0
        for names, count in stacks(tool):
            fs = [n for n in names if n in ("top", "mid", "leaf")]
            if "top" not in names:
                continue
            total += 1
            if fs not in (["top"], ["top", "mid"], ["top", "mid", "leaf"]):
                wrong += 1
        return samples, invalid, wrong, total
    finally:
        t.stop()


def slowdown(tool, t, rate, window, rounds):
    p = subprocess.Popen(command(tool, t.pid, rate),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.5)
    ratios = []
    for k in range(rounds):
        order = ("on", "off") if k % 2 == 0 else ("off", "on")
        res = {}
        for mode in order:
            if mode == "off":
                rec.pause(p.pid, t.pid)
            res[mode] = rec.throughput(t, window)
            if mode == "off":
                os.kill(p.pid, signal.SIGCONT)
        ratios.append(res["on"] / res["off"])
    p.send_signal(signal.SIGINT)
    p.communicate()
    ratios.sort()
    return 100.0 * (1 - ratios[len(ratios) // 2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--window", type=float, default=1.5)
    a = ap.parse_args()
    if not AUSTIN:
        print("austin not installed (apt-get install austin): nothing to "
              "compare")
        return 0
    found, _ = pytargets.interpreters()
    found = [i for i in found if not i.rootfs and
             re.search(r"(2\.7|3\.[6-9])(\.\d+)?$", i.label)]
    print("%-16s %-9s %9s %10s %9s %9s %10s %8s" % (
        "interpreter", "tool", "us/sample", "samples", "flagged",
        "wrong", "stacks", "slowdown"))
    for interp in found:
        t = pytargets.Target(interp, "counter.py", ["8", "30", "0.1"])
        try:
            while t.readline().strip() != "ready":
                pass
            rec.throughput(t, 1)
            res = {}
            for tool in ("pystitch", "austin"):
                cpu, samples, _, _ = run_for(tool, t.pid, a.rate, a.seconds)
                res[tool] = [1e6 * cpu / max(samples, 1), samples]
            for tool in ("pystitch", "austin"):
                res[tool].append(slowdown(tool, t, a.rate, a.window,
                                          a.rounds))
        finally:
            t.stop()
        for tool in ("pystitch", "austin"):
            samples, invalid, wrong, total = wrong_stacks(
                tool, interp, a.rate, a.seconds)
            print("%-16s %-9s %9.1f %10d %9d %9d %10d %7.2f%%" % (
                interp.label, tool, res[tool][0], res[tool][1], invalid,
                wrong, total, res[tool][2]))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
