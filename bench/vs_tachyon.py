# vs_tachyon.py: pystitch against CPython 3.15's own sampler ("tachyon",
# `python3.15 -m profiling.sampling attach`) on the same target, in one
# run: sid's python3.15 running tests/targets/counter.py (8 threads x 30
# frames, spinning) in the sid rootfs as a container; every thread at
# every tick (pystitch `--idle --mode wall`, tachyon `-a --mode wall`),
# collapsed/folded output to a file, at each rate, the two alternating
# for several rounds. Reported per rate: CPU per thread-sample (the
# profiler process's user+system time over the thread-samples it wrote:
# pystitch's summary, the sum of tachyon's collapsed counts), the
# thread-samples each delivered, and the ratio, as medians with the
# spread. Tachyon runs inside the container (nsenter into the target's
# namespaces: it needs the target's pid and its python3.15); pystitch from
# the host. Start-up is in both (a run is long enough to make it small).
# usage: python3 bench/vs_tachyon.py [--rates 1000,5000,10000]
#                                    [--rounds 3] [--seconds 5]
#                                    [--threads 8] [--austin PATH]
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

PST = os.path.join(HERE, "..", "pystitch")
ROOT = os.path.join(pytargets.ROOTFS_DIR, "sid-rootfs")
WROTE = re.compile(r"wrote .*?: (\d+) samples")


def cpu_of(cmd):
    """(CPU seconds of cmd and its descendants, its CompletedProcess)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime - before.ru_utime) +
            (after.ru_stime - before.ru_stime)), r


def collapsed_total(path):
    n = 0
    with open(path, errors="replace") as f:
        for line in f:
            _, _, count = line.rstrip("\n").rpartition(" ")
            if count.isdigit():
                n += int(count)
    return n


def run_pystitch(t, rate, seconds):
    out = "/tmp/pst-vs.folded"
    cpu, r = cpu_of([PST, "record", "-p", str(t.pid), "-r", str(rate), "-d",
                     str(seconds), "--idle", "--mode", "wall", "-f",
                     "folded", "-o", out])
    m = WROTE.search(r.stderr.decode(errors="replace"))
    if r.returncode != 0 or not m:
        raise RuntimeError("pystitch: %s" % r.stderr.decode()[-500:])
    return cpu, int(m.group(1))


def run_tachyon(t, nspid, rate, seconds):
    inside = "/tmp/pst-vs-tachyon.txt"
    # the container (pytargets) has no /proc of its own: mounted once
    cpu, r = cpu_of(["nsenter", "-t", str(t.pid), "-p", "-m", "-r", "-w",
                     "/bin/sh", "-c", "[ -e /proc/self ] || mount -t proc "
                     "proc /proc; exec \"$@\"", "sh",
                     "python3.15", "-m", "profiling.sampling", "attach", "-a",
                     "-r", str(rate), "-d", str(seconds), "--mode", "wall",
                     "--collapsed", "-o", inside, str(nspid)])
    path = ROOT + inside
    if r.returncode != 0 or not os.path.exists(path):
        raise RuntimeError("tachyon: exit %d: %s" % (
            r.returncode, (r.stdout + r.stderr).decode()[-800:]))
    n = collapsed_total(path)
    os.unlink(path)
    return cpu, n


def run_austin(austin, t, rate, seconds):
    out = "/tmp/pst-vs-austin.txt"
    cpu, r = cpu_of([austin, "-i", "%dus" % (1000000 // rate), "-x",
                     str(seconds), "-p", str(t.pid), "-o", out])
    n = collapsed_total(out)
    return cpu, n


def spread(xs, fmt):
    return (fmt + " [" + fmt + "-" + fmt + "]") % (
        statistics.median(xs), min(xs), max(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default="1000,5000,10000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--austin", default=None)
    a = ap.parse_args()
    if not os.access(ROOT + "/usr/bin/python3.15", os.X_OK):
        sys.exit("vs_tachyon.py: no python3.15 in %s (tests/setup-rootfs.sh)"
                 % ROOT)
    interp = pytargets.Interp("sid-3.15", "/usr/bin/python3.15", ROOT)
    t = pytargets.Target(interp, "counter.py", [str(a.threads), "30"])
    try:
        t.readline()
        nspid = t.ns_tid_map()[t.pid]
        print("target: sid python3.15, counter.py %d threads x 30 frames "
              "(host pid %d, %d in its namespace), %d CPUs, %d rounds of "
              "%.0f s" % (a.threads, t.pid, nspid, os.cpu_count(), a.rounds,
                          a.seconds))
        for rate in [int(x) for x in a.rates.split(",")]:
            res = {"pystitch": [], "tachyon": [], "austin": []}
            for _ in range(a.rounds):
                res["pystitch"].append(run_pystitch(t, rate, a.seconds))
                res["tachyon"].append(run_tachyon(t, nspid, rate, a.seconds))
                if a.austin:
                    res["austin"].append(run_austin(a.austin, t, rate,
                                                    a.seconds))
            us = {k: [c / n * 1e6 for c, n in v if n] for k, v in
                  res.items() if v}
            ratios = [p / q for p, q in zip(us["pystitch"], us["tachyon"])]
            got = [p[1] / float(q[1]) for p, q in zip(res["pystitch"],
                                                       res["tachyon"])]
            print("%5d Hz  pystitch %s us/thread-sample (%s samples)  "
                  "tachyon %s us (%s)  ratio %s  samples pystitch/tachyon %s"
                  % (rate, spread(us["pystitch"], "%.1f"),
                     spread([n for _, n in res["pystitch"]], "%d"),
                     spread(us["tachyon"], "%.1f"),
                     spread([n for _, n in res["tachyon"]], "%d"),
                     spread(ratios, "%.2f"), spread(got, "%.2f")))
            if us.get("austin"):
                print("         austin %s us/thread-sample" %
                      spread(us["austin"], "%.1f"))
            sys.stdout.flush()
    finally:
        t.stop()


if __name__ == "__main__":
    main()
