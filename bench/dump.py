# dump.py: benchmark of `pystitch dump` (issue 2 figures). For each CPython
# found, starts bench/targets/many.py (16 threads, 30-frame stacks) and runs
# `pystitch dump --json` REPEAT times, reporting the median of: wall time
# from attach to exit, analysis time (binary + libc, to the first stack is
# analysis + snapshot), snapshot time, and per-thread cost.
# With --ddp N: a hung torch.distributed job instead (tests/targets/
# ddp_hang.py: a launcher and N gloo ranks, /usr/bin/python3.11 with
# python3-torch, --threads more threads per rank), `dump -s` of the
# launcher and its variants (--native, --locals), wall time and CPU.
# usage: python3 bench/dump.py [--repeat N] [--threads N]
#        python3 bench/dump.py --ddp 4 --threads 15 [--repeat N]
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import pytargets  # noqa: E402



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--busy", type=int, default=0,
                    help="threads spinning in Python (the rest sleep)")
    ap.add_argument("--pystitch", default=os.path.join(HERE, "..",
                                                        "pystitch"))
    ap.add_argument("--ddp", type=int, default=0,
                    help="ranks of a hung torch.distributed job instead")
    a = ap.parse_args()
    if a.ddp:
        return ddp(a)
    found, _ = pytargets.interpreters()
    print("%d-thread target (%d busy), 30-frame stacks, median of %d runs"
          % (a.threads, a.busy, a.repeat))
    print("%-24s %7s %9s %9s %11s %11s %9s" % (
        "interpreter", "threads", "wall ms", "cpu ms", "analysis ms",
        "snapshot ms", "us/thread"))
    for interp in found:
        t = pytargets.Target(interp, "many.py",
                             [str(a.threads), "30", str(a.busy)])
        try:
            while t.readline().strip() != "ready":
                pass
            walls, cpus, anal, snaps, nth = [], [], [], [], 0
            for _ in range(a.repeat):
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                r = subprocess.run([a.pystitch, "dump", "--json", "-p",
                                    str(t.pid)], capture_output=True)
                walls.append((time.perf_counter() - t0) * 1e3)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus.append((r1.ru_utime + r1.ru_stime - r0.ru_utime -
                             r0.ru_stime) * 1e3)
                d = json.loads(r.stdout)
                anal.append(d["analysis_ms"])
                snaps.append(d["snapshot_ms"])
                nth = len(d["threads"])
            med = statistics.median
            print("%-24s %7d %9.2f %9.1f %11.2f %11.2f %9.1f" % (
                interp.label, nth, med(walls), med(cpus), med(anal),
                med(snaps), med(snaps) * 1e3 / nth))
            sys.stdout.flush()
        finally:
            t.stop()


def ddp(a):
    t = subprocess.Popen(["/usr/bin/python3.11", "-u",
                          os.path.join(HERE, "..", "tests", "targets",
                                       "ddp_hang.py"), "launch", str(a.ddp),
                          "600", str(a.threads)], stdout=subprocess.PIPE,
                         text=True)
    try:
        while t.stdout.readline().strip() != "ready":
            pass
        time.sleep(1)
        print("hung gloo job: launcher + %d ranks, %d threads more each, "
              "median [min-max] of %d runs" % (a.ddp, a.threads, a.repeat))
        for extra in ([], ["--native"], ["--locals"]):
            walls, cpus, nth, within = [], [], 0, ""
            for _ in range(a.repeat):
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                r = subprocess.run([a.pystitch, "dump", "-s", "-p",
                                    str(t.pid)] + extra, capture_output=True,
                                   text=True)
                walls.append((time.perf_counter() - t0) * 1e3)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus.append((r1.ru_utime + r1.ru_stime - r0.ru_utime -
                             r0.ru_stime) * 1e3)
                within = r.stdout.splitlines()[0] if r.stdout else r.stderr
            med = statistics.median
            print("dump -s %-9s wall %6.1f ms [%.1f-%.1f], cpu %6.1f ms; %s"
                  % (" ".join(extra), med(walls), min(walls), max(walls),
                     med(cpus), within))
            sys.stdout.flush()
    finally:
        t.terminate()
        t.wait(timeout=30)
        for line in subprocess.run(["pgrep", "-f", "ddp_hang.py rank"],
                                   capture_output=True,
                                   text=True).stdout.split():
            os.kill(int(line), 9)


if __name__ == "__main__":
    main()
