# always.py: the figures of always-on profiling (issue 13).
#   push    pystitch's CPU with --push (a local ingest endpoint, an interval
#           of --interval s) against a plain record to a file, in
#           alternating runs on the 8-thread counter target.
#   scan    --all's discovery cost: N idle processes (sleep) and 2 Python
#           ones on the host; the /proc scans' time and pystitch's CPU per
#           second, --match leaving all but the two out.
#   memory  a long --rotate run over P processes x T threads: pystitch's RSS
#           every few seconds (the curve must be flat), CPU per
#           thread-sample.
# usage: python3 bench/always.py push [--rounds 5] [--seconds 10]
#        python3 bench/always.py scan [--procs 300] [--seconds 10]
#        python3 bench/always.py memory [--procs 50] [--threads 10]
#                                       [--seconds 120] [--rotate 10]
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import pushrecv  # noqa: E402
import pytargets  # noqa: E402

PST = os.path.join(HERE, "..", "pystitch")
INTERP = "/root/.pyenv/versions/3.12.1/bin/python3.12"


def cpu_of(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + \
        (after.ru_stime - before.ru_stime), r.stderr.decode()


def counter(interp, threads="8"):
    t = pytargets.Target(pytargets.Interp("bench", interp), "counter.py",
                         [threads, "30"])
    t.readline()
    return t


def bench_push(a):
    t = counter(a.interp)
    recv = pushrecv.Receiver()
    common = [PST, "record", "-p", str(t.pid), "-r", str(a.rate), "-d",
              str(a.seconds)]
    rec, push, sent = [], [], []
    try:
        for _ in range(a.rounds):
            rec.append(cpu_of(common + ["-f", "pprof", "-o",
                                        "/tmp/pst-always.pprof"])[0])
            c, err = cpu_of(common + ["--push", recv.url, "--push-interval",
                                      str(a.interval)])
            push.append(c)
            m = re.search(r"push: (\d+) of (\d+) profiles", err)
            sent.append(m.group(0) if m else err)
    finally:
        recv.stop()
        t.stop()
    r, p = statistics.median(rec), statistics.median(push)
    print("%d rounds of %.0f s at %.0f Hz, 8-thread counter, %s; push "
          "every %.0f s" % (a.rounds, a.seconds, a.rate, a.interp,
                            a.interval))
    print("record -f pprof: median %.3f s CPU (%.2f%% of a core)  runs %s" %
          (r, 100 * r / a.seconds, " ".join("%.3f" % x for x in rec)))
    print("record --push:   median %.3f s CPU (%.2f%% of a core)  runs %s" %
          (p, 100 * p / a.seconds, " ".join("%.3f" % x for x in push)))
    print("push / record: %.3f   (%s)" % (p / r, sent[-1]))


def bench_scan(a):
    sleeps = [subprocess.Popen(["sleep", "600"]) for _ in range(a.procs)]
    py = [counter(a.interp, "2") for _ in range(2)]
    try:
        pids = "|".join(str(t.pid) for t in py)
        c, err = cpu_of([PST, "record", "--all", "--match", "counter.py",
                         "-d", str(a.seconds), "-f", "folded", "-o",
                         "/tmp/pst-scan.folded"])
        base, _ = cpu_of([PST, "record", "-p", ",".join(str(t.pid)
                                                         for t in py),
                          "-d", str(a.seconds), "-f", "folded", "-o",
                          "/tmp/pst-scan.folded"])
        m = re.search(r"--all: .*", err)
        procs = len([x for x in os.listdir("/proc") if x.isdigit()])
        print("%d processes on the host (%d sleep, 2 Python: %s), %.0f s "
              "of --all at 100 Hz" % (procs, a.procs, pids, a.seconds))
        print(m.group(0) if m else err)
        print("pystitch CPU %.3f s (%.2f%% of a core), sampling the 2 "
              "Python processes included; the same 2 given with -p: %.3f s "
              "(%.2f%%): --all costs %.2f%% of a core" % (
                  c, 100 * c / a.seconds, base, 100 * base / a.seconds,
                  100 * (c - base) / a.seconds))
    finally:
        for s in sleeps:
            s.kill()
            s.wait()
        for t in py:
            t.stop()


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# A process of T threads, each 20 frames deep, sleeping (50 processes of
# spinning threads would starve two cores): with --idle every thread is
# sampled at every tick all the same.
SLEEPERS = """
import sys, threading, time
def leaf():
    while True:
        time.sleep(0.1)
def down(n):
    return leaf() if n <= 1 else down(n - 1)
for k in range(int(sys.argv[1]) - 1):
    threading.Thread(target=down, args=(20,), daemon=True).start()
print("ready", flush=True)
down(20)
"""


def sleepers(interp, threads):
    p = subprocess.Popen([interp, "-c", SLEEPERS, str(threads),
                          "pst-bench-sleepers"], stdout=subprocess.PIPE)
    p.stdout.readline()
    return p


def bench_memory(a):
    targets = [sleepers(a.interp, a.threads) for _ in range(a.procs)]
    d = tempfile.mkdtemp(prefix="pst-rot-")
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.Popen(
            [PST, "record", "--all", "--match", "pst-bench-sleepers", "--idle",
             "-r", str(a.rate), "-d", str(a.seconds), "--rotate",
             str(a.rotate), "-f", "pprof", "-o",
             os.path.join(d, "%H%M%S.pprof")], stderr=subprocess.PIPE)
        curve = []
        start = time.time()
        while p.poll() is None:
            time.sleep(a.every)
            try:
                kb = rss_kb(p.pid)
            except OSError:
                break
            if kb:
                curve.append((time.time() - start, kb))
        err = p.stderr.read().decode()
        p.wait()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + \
            (after.ru_stime - before.ru_stime)
        m = re.search(r"recorded (\d+) samples", err)
        samples = int(m.group(1)) if m else 0
        files = len(os.listdir(d))
        print("%d processes x %d threads (--idle), %.0f Hz, %.0f s, "
              "--rotate %.0f: %d files" % (a.procs, a.threads, a.rate,
                                           a.seconds, a.rotate, files))
        print("RSS (MB) over time: " + ", ".join(
            "%.0fs %.1f" % (t, kb / 1024.0) for t, kb in curve))
        half = [kb for t, kb in curve if t >= a.seconds / 2]
        if half:
            print("second half: min %.1f MB, max %.1f MB" % (
                min(half) / 1024.0, max(half) / 1024.0))
        if samples:
            want = a.procs * a.threads * a.rate * a.seconds
            print("%d samples (%.0f%% of %d threads x %.0f Hz), CPU %.2f s: "
                  "%.2f us per thread-sample, %.1f%% of a core" % (
                      samples, 100 * samples / want, a.procs * a.threads,
                      a.rate, cpu, cpu / samples * 1e6,
                      100 * cpu / a.seconds))
        for line in err.splitlines():
            if "errors" in line or "late" in line:
                print(line)
    finally:
        for t in targets:
            t.kill()
            t.wait()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["push", "scan", "memory"])
    ap.add_argument("--rate", type=float, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--interval", type=float, default=1)
    ap.add_argument("--procs", type=int, default=None)
    ap.add_argument("--threads", type=int, default=10)
    ap.add_argument("--rotate", type=float, default=10)
    ap.add_argument("--every", type=float, default=5)
    ap.add_argument("--interp", default=INTERP)
    a = ap.parse_args()
    if a.what == "push":
        bench_push(a)
    elif a.what == "scan":
        a.procs = 300 if a.procs is None else a.procs
        bench_scan(a)
    else:
        a.procs = 50 if a.procs is None else a.procs
        bench_memory(a)


if __name__ == "__main__":
    main()
