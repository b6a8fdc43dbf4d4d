# errors.py: error rate of `pystitch record` per CPython version, without
# and with --blocking, on tests/targets/counter.py (8 spinning threads,
# 30-frame stacks; their stacks change all the time, the worst case for
# torn reads). usage: python3 bench/errors.py [--seconds 3] [--rate 200]
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import pytargets  # noqa: E402

PST = os.path.join(HERE, "..", "pystitch")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--rate", type=int, default=200)
    a = ap.parse_args()
    found, _ = pytargets.interpreters()
    print("%-24s %-10s %8s %8s %8s %8s" % ("interpreter", "mode", "samples",
                                           "errors", "torn", "retries"))
    for interp in found:
        t = pytargets.Target(interp, "counter.py", ["8", "30"])
        try:
            while t.readline().strip() != "ready":
                pass
            for mode in ([], ["--blocking"]):
                r = subprocess.run([PST, "record", "-v", "-p", str(t.pid),
                                    "-r", str(a.rate), "-d",
                                    str(a.seconds), "--idle", "-f",
                                    "folded", "-o", "/tmp/pst-err.folded"]
                                   + mode, capture_output=True)
                err = r.stderr.decode()
                s = re.search(r": (\d+) samples", err)
                e = re.search(r"(\d+) errors \(([\d.]+)%: (\d+) torn", err)
                rt = re.search(r"(\d+) walks redone", err)
                print("%-24s %-10s %8s %7s%% %8s %8s" % (
                    interp.label, "blocking" if mode else "default",
                    s.group(1) if s else "?", e.group(2) if e else "?",
                    e.group(3) if e else "?", rt.group(1) if rt else "0"))
                sys.stdout.flush()
        finally:
            t.stop()


if __name__ == "__main__":
    main()
