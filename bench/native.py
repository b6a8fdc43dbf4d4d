# native.py: --native figures per interpreter: merge success rate (share of
# thread-samples whose native and Python stacks were merged) on
# tests/targets/native.py (qsort with a Python callback, a native-only
# thread, sleepers) and tests/targets/counter.py (8 CPU-bound threads, 30
# frames), and pystitch's CPU per thread-sample with --native.
# usage: python3 bench/native.py [--seconds 5] [--rate 200]
import argparse
import os
import re
import resource
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
os.environ.setdefault("PST_SRCDIR", os.path.join(HERE, ".."))
import pytargets  # noqa: E402
import test_native  # noqa: E402

PST = os.path.join(HERE, "..", "pystitch")


def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one(interp, script, args, seconds, rate):
    t = pytargets.Target(interp, script, args)
    try:
        while t.readline().strip() != "ready":
            pass
        c0 = cpu()
        r = subprocess.run([PST, "record", "--native", "--idle", "-p",
                            str(t.pid), "-d", str(seconds), "-r", str(rate),
                            "-f", "folded", "-o", "/tmp/pst-native.folded"],
                           capture_output=True)
        c = cpu() - c0
        err = r.stderr.decode()
        m = re.search(r"native: (\d+) of (\d+) thread-samples", err)
        e = re.search(r"(\d+) errors \(", err)
        if not m:
            return None
        merged, total = int(m.group(1)), int(m.group(2))
        return merged, total, int(e.group(1)) if e else -1, \
            1e6 * c / max(total, 1)
    finally:
        t.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rate", type=int, default=200)
    a = ap.parse_args()
    lib = test_native.build_lib()
    found, _ = pytargets.interpreters()
    print("%-24s %-11s %9s %9s %9s %7s %10s" % (
        "interpreter", "target", "merged", "samples", "rate", "errors",
        "us/sample"))
    for interp in found:
        for script, args in (("native.py", [test_native.lib_for(interp,
                                                                 lib)]),
                             ("counter.py", ["8", "30"])):
            res = one(interp, script, args, a.seconds, a.rate)
            if not res:
                print("%-24s %-11s (no result)" % (interp.label, script))
                continue
            merged, total, errors, us = res
            print("%-24s %-11s %9d %9d %8.3f%% %7d %10.1f" % (
                interp.label, script, merged, total,
                100.0 * merged / max(total, 1), errors, us))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
