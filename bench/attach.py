# attach.py: does sampling keep its rate while a job's processes are
# attached? `record -s` of a torch.distributed job (tests/targets/
# ddp_hang.py: a launcher and N gloo ranks, /usr/bin/python3.11 with
# Debian's python3-torch) from its start: the ranks are found and
# attached as they appear, then import torch (libtorch_cpu's symbols read
# for native thread names, and with --native for frames). Builds run
# alternately (this tree's and a base), with and without --native: the
# worst lag of a tick, late ticks (more than a period), ticks on time,
# pystitch's peak RSS (VmHWM; --ranks 1 and 8 give the cost per process).
# usage: python3 bench/attach.py [--base PATH] [--ranks 4] [--rate 100]
#                                [--rounds 3] [--seconds 12]
import argparse
import os
import re
import statistics
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
NEW = os.path.join(HERE, "..", "pystitch")
JOB = os.path.join(HERE, "..", "tests", "targets", "ddp_hang.py")
PY = "/usr/bin/python3.11"
LAG = re.compile(r"(\d+) late ticks, max lag ([\d.]+) ms")
TICKS = re.compile(r"ticks: (\d+) of the (\d+) asked, ([\d.]+)% of them on")


def one(pst, a, native):
    cmd = [pst, "record", "-s", "-r", str(a.rate), "-d", str(a.seconds),
           "-v", "-f", "folded", "-o", "/tmp/pst-attach.folded"]
    if native:
        cmd.append("--native")
    cmd += ["--", PY, JOB, "launch", str(a.ranks), str(a.seconds + 2), "5"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    hwm = [0]
    done = threading.Event()

    def watch():  # pystitch's peak RSS (VmHWM), read until it ends
        while not done.wait(0.2):
            try:
                with open("/proc/%d/status" % p.pid) as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            hwm[0] = max(hwm[0], int(line.split()[1]))
            except OSError:
                return
    w = threading.Thread(target=watch)
    w.start()
    _, err = p.communicate(timeout=a.seconds * 5)
    done.set()
    w.join()
    err = err.decode(errors="replace")
    lag, ticks = LAG.search(err), TICKS.search(err)
    if not lag or not ticks:
        sys.exit("no summary from %s:\n%s" % (" ".join(cmd), err[-2000:]))
    return {"late": int(lag.group(1)), "lag": float(lag.group(2)),
            "on_time": float(ticks.group(3)), "rss": hwm[0] / 1024.0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default=None)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--rate", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=12)
    a = ap.parse_args()
    if not os.path.exists(PY) or subprocess.run(
            [PY, "-c", "import torch"], capture_output=True).returncode:
        sys.exit("needs %s with torch (python3-torch)" % PY)
    builds = [("new", NEW)] + ([("base", a.base)] if a.base else [])
    res = {}
    for rnd in range(a.rounds):
        for native in (False, True):
            for name, pst in builds:
                r = one(pst, a, native)
                res.setdefault((name, native), []).append(r)
                print("round %d %-4s %-8s late %3d  max lag %6.1f ms  "
                      "on time %5.1f%%  peak RSS %.1f MB" % (
                          rnd + 1, name, "--native" if native else "",
                          r["late"], r["lag"], r["on_time"], r["rss"]),
                      flush=True)
    print("\n%d ranks, record -s -r %d, %d s; median [min-max] of %d rounds"
          % (a.ranks, a.rate, a.seconds, a.rounds))
    for (name, native), rs in sorted(res.items()):
        def col(k):
            v = [r[k] for r in rs]
            return "%.1f [%.1f-%.1f]" % (statistics.median(v), min(v), max(v))
        print("  %-4s %-8s  max lag %s ms  late ticks %s  on time %s%%  "
              "peak RSS %s MB" % (name, "--native" if native else "",
                                  col("lag"), col("late"), col("on_time"),
                                  col("rss")))


if __name__ == "__main__":
    main()
