# record.py: benchmark of `pystitch record` (issue 3 figures), all measured
# side by side in one run on one target:
#   slowdown    target throughput (tests/targets/counter.py: 8 CPU-bound
#               threads, 30-frame stacks) with pystitch sampling vs
#               SIGSTOPped, at 100 Hz and 1 kHz, in alternating windows
#               (median of the pair ratios);
#   cpu/sample  pystitch's CPU time (getrusage) per thread-sample;
#   max rate    the highest rate whose ticks stay on schedule (< 1% late);
#   rss         peak RSS of pystitch after --rss-seconds at 100 Hz on 16
#               threads (600 for the 10 minutes).
# usage: python3 bench/record.py [--window 2] [--rounds 15] [--rss-seconds 60]
#                                [--interp PATH] [--only slowdown,rate,rss]
import argparse
import os
import re
import resource
import signal
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


def read_count(t):
    """The target's next "count N T" line: (T, N)."""
    while True:
        parts = t.readline().split()
        if len(parts) == 3 and parts[0] == "count":
            return float(parts[2]), int(parts[1])


def throughput(t, seconds):
    """Iterations per second the target did over the next `seconds`, by
    its own clock (first and last count line of the window)."""
    t0, c0 = read_count(t)
    t1, c1 = t0, c0
    while t1 - t0 < seconds:
        t1, c1 = read_count(t)
    return (c1 - c0) / (t1 - t0)


def proc_cpu(pid):
    """utime + stime of pid in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / float(
        os.sysconf("SC_CLK_TCK"))


def traced_threads(pid):
    """Threads of pid in a tracing stop (t)."""
    n = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                n += f.read().rpartition(")")[2].split()[0] == "t"
        except OSError:
            pass
    return n


def pause(profiler, target):
    """SIGSTOPs the profiler, never while it holds a target thread
    stopped (--blocking, --native): that thread would stay stopped for the
    whole window."""
    for _ in range(1000):
        os.kill(profiler, signal.SIGSTOP)
        time.sleep(0.002)
        if not traced_threads(target):
            return
        os.kill(profiler, signal.SIGCONT)
        time.sleep(0.001)
    raise RuntimeError("could not pause the profiler between samples")


def slowdown(interp, window, rounds, extra=(), rates=(100, 1000)):
    """One target, one pystitch per rate, recording the whole time but
    SIGSTOPped in every other window: the target's throughput with
    pystitch running and stopped is compared window by window (pairs of
    neighbouring windows, so drift hits both alike); the median of the
    pair ratios is reported. pystitch holds no thread of the target
    between ticks (non-blocking mode, stable threads), so stopping it
    stops the profiling and nothing else."""
    t = pytargets.Target(interp, "counter.py", ["8", "30", "0.1"])
    try:
        while t.readline().strip() != "ready":
            pass
        throughput(t, 2)  # warm up
        print("%s: 8 CPU-bound threads, 30 frames; %d pairs of %.1f s "
              "windows per rate" % (interp.label, rounds, window))
        for rate in rates:
            p = subprocess.Popen(
                [PST, "record", "-p", str(t.pid), "-r", str(rate), "-d",
                 "3600", "-f", "folded", "-o", "/tmp/pst-bench.folded",
                 "--idle"] + list(extra), stderr=subprocess.PIPE)
            time.sleep(0.5)
            ratios, on_all, off_all = [], [], []
            cpu_on = 0.0
            for k in range(rounds):
                # Alternate which comes first, against drift within a pair.
                order = ("on", "off") if k % 2 == 0 else ("off", "on")
                res = {}
                for mode in order:
                    if mode == "off":
                        pause(p.pid, t.pid)
                    c0 = proc_cpu(p.pid)
                    res[mode] = throughput(t, window)
                    if mode == "on":
                        cpu_on += proc_cpu(p.pid) - c0
                    if mode == "off":
                        os.kill(p.pid, signal.SIGCONT)
                ratios.append(res["on"] / res["off"])
                on_all.append(res["on"])
                off_all.append(res["off"])
            os.kill(p.pid, signal.SIGINT)
            _, err = p.communicate()
            m = re.search(r"wrote .*?: (\d+) samples .* over ([\d.]+) s",
                          err.decode())
            samples = int(m.group(1)) if m else 0
            secs = float(m.group(2)) if m else 1
            ratios.sort()
            med = ratios[len(ratios) // 2]
            print("  %5d Hz%s: slowdown %.2f%% (median of %d pairs; pairs "
                  "from %.2f%% to %.2f%%); unprofiled %.0f/s, profiled "
                  "%.0f/s; pystitch %.1f%% of a CPU while sampling, "
                  "%.1f us CPU per thread-sample" % (
                      rate, " " + " ".join(extra) if extra else "",
                      100.0 * (1 - med), len(ratios),
                      100.0 * (1 - ratios[-1]), 100.0 * (1 - ratios[0]),
                      sum(off_all) / len(off_all), sum(on_all) / len(on_all),
                      100.0 * cpu_on / (rounds * window),
                      1e6 * cpu_on / max(samples * (rounds * window) /
                                         max(secs - rounds * window, 1e-3),
                                         1)))
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
    ap.add_argument("--window", type=float, default=2)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--rss-seconds", type=int, default=60)
    ap.add_argument("--interp", default="/root/.pyenv/versions/3.12.1/bin/"
                    "python3.12")
    ap.add_argument("--only", default="slowdown,rate,rss")
    ap.add_argument("--native", action="store_true",
                    help="slowdown with --native (100 Hz and 1 kHz)")
    a = ap.parse_args()
    interp = pytargets.Interp(os.path.basename(a.interp), a.interp)
    only = a.only.split(",")
    if "slowdown" in only:
        slowdown(interp, a.window, a.rounds,
                 ["--native"] if a.native else ())
    if "rate" in only:
        max_rate(interp)
    if "rss" in only:
        rss(interp, a.rss_seconds)


if __name__ == "__main__":
    main()
