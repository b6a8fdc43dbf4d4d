# record.py: benchmark of `pystitch record` (issue 3 figures), all measured
# side by side in one run on one target:
#   slowdown    target throughput (tests/targets/counter.py: 8 CPU-bound
#               threads, 30-frame stacks) unprofiled vs at 100 Hz and 1 kHz,
#               in alternating windows so drift hits both alike;
#   cpu/sample  pystitch's CPU time (getrusage) per thread-sample;
#   max rate    the highest rate whose ticks stay on schedule (< 1% late);
#   rss         peak RSS of pystitch after --rss-seconds at 100 Hz on 16
#               threads (600 for the 10 minutes).
# usage: python3 bench/record.py [--window 5] [--rounds 3] [--rss-seconds 60]
#                                [--interp PATH] [--only slowdown,rate,rss]
import argparse
import os
import re
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import pytargets  # noqa: E402

PST = os.path.join(HERE, "..", "pystitch")


def rusage_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime, r.ru_maxrss


def record(pid, rate, seconds, threads_out=None, extra=()):
    """Runs one recording; returns (cpu seconds, samples, late ticks,
    ticks, stderr)."""
    c0, _ = rusage_children()
    r = subprocess.run([PST, "record", "-p", str(pid), "-r", str(rate),
                        "-d", str(seconds), "-f", "folded", "-o",
                        "/tmp/pst-bench.folded"] + list(extra),
                       capture_output=True)
    c1, _ = rusage_children()
    err = r.stderr.decode()
    m = re.search(r"wrote .*?: (\d+) samples", err)
    late = re.search(r"(\d+) late ticks", err)
    return (c1 - c0, int(m.group(1)) if m else 0,
            int(late.group(1)) if late else -1, err)


def counts_between(t, seconds):
    """Iterations the target did over `seconds` (from its own counter)."""
    first = None
    end = time.time() + seconds
    last = None
    while time.time() < end + 1.1:
        line = t.readline().strip()
        if line.startswith("count "):
            v = int(line.split()[1])
            now = time.time()
            if first is None:
                first = (now, v)
            last = (now, v)
            if now >= end:
                break
    return (last[1] - first[1]) / (last[0] - first[0])


def slowdown(interp, window, rounds):
    t = pytargets.Target(interp, "counter.py", ["8", "30"])
    try:
        while t.readline().strip() != "ready":
            pass
        counts_between(t, 2)  # warm up
        res = {"off": [], 100: [], 1000: []}
        cpu = {100: [0.0, 0], 1000: [0.0, 0]}
        for _ in range(rounds):
            for mode in ("off", 100, 1000):
                if mode == "off":
                    res[mode].append(counts_between(t, window))
                    continue
                p = subprocess.Popen(
                    [PST, "record", "-p", str(t.pid), "-r", str(mode),
                     "-d", str(window + 2), "-f", "folded", "-o",
                     "/tmp/pst-bench.folded", "--idle"],
                    stderr=subprocess.PIPE)
                time.sleep(0.5)
                res[mode].append(counts_between(t, window))
                c0, _ = rusage_children()
                _, err = p.communicate()
                c1, _ = rusage_children()
                m = re.search(r"wrote .*?: (\d+) samples", err.decode())
                cpu[mode][0] += c1 - c0
                cpu[mode][1] += int(m.group(1)) if m else 0
        base = sum(res["off"]) / len(res["off"])
        print("%s: target throughput %.0f iterations/s unprofiled" % (
            interp.label, base))
        for mode in (100, 1000):
            v = sum(res[mode]) / len(res[mode])
            print("  %5d Hz: %.0f/s, slowdown %.2f%%; pystitch %.1f us CPU "
                  "per thread-sample (%d samples, --idle)" % (
                      mode, v, 100.0 * (base - v) / base,
                      1e6 * cpu[mode][0] / max(cpu[mode][1], 1),
                      cpu[mode][1]))
        sys.stdout.flush()
    finally:
        t.stop()


def max_rate(interp):
    t = pytargets.Target(interp, "counter.py", ["8", "30"])
    try:
        while t.readline().strip() != "ready":
            pass
        print("%s: rate sustained (8 threads, 3 s each, --idle):" %
              interp.label)
        for rate in (500, 1000, 2000, 3000, 4000, 6000):
            cpu, samples, late, err = record(t.pid, rate, 3,
                                             extra=["--idle"])
            ticks = re.search(r"over ([\d.]+) s", err)
            expect = rate * float(ticks.group(1)) if ticks else rate * 3
            print("  %5d Hz: %d samples (%.0f ticks expected x 9 threads), "
                  "%d late ticks (%.1f%%), %.1f us CPU/sample" % (
                      rate, samples, expect, late,
                      100.0 * late / expect, 1e6 * cpu / max(samples, 1)))
            sys.stdout.flush()
    finally:
        t.stop()


def rss(interp, seconds):
    t = pytargets.Target(interp, "counter.py", ["16", "30"])
    try:
        while t.readline().strip() != "ready":
            pass
        p = subprocess.Popen(["/usr/bin/time", "-v", PST, "record", "-p",
                              str(t.pid), "-r", "100", "-d", str(seconds),
                              "-f", "pprof", "-o", "/tmp/pst-bench.pb.gz",
                              "--idle"], stderr=subprocess.PIPE)
        _, err = p.communicate()
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                      err.decode())
        s = re.search(r"wrote .*?: (\d+) samples", err.decode())
        print("%s: peak RSS %.1f MB after %d s at 100 Hz on 16 threads "
              "(%s samples)" % (interp.label, int(m.group(1)) / 1024.0
                                if m else -1, seconds,
                                s.group(1) if s else "?"))
    finally:
        t.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rss-seconds", type=int, default=60)
    ap.add_argument("--interp", default="/root/.pyenv/versions/3.12.1/bin/"
                    "python3.12")
    ap.add_argument("--only", default="slowdown,rate,rss")
    a = ap.parse_args()
    interp = pytargets.Interp(os.path.basename(a.interp), a.interp)
    only = a.only.split(",")
    if "slowdown" in only:
        slowdown(interp, a.window, a.rounds)
    if "rate" in only:
        max_rate(interp)
    if "rss" in only:
        rss(interp, a.rss_seconds)


if __name__ == "__main__":
    main()
