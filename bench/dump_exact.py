# dump_exact.py: dump completeness: of the threads that exist, how many
# get a stack, over many dumps of a busy target with the machine loaded
# (two CPU burners beside it). Target: tests/targets/storm.py (six threads
# recursing as fast as they can, the stacks that change most) plus its
# main thread. Compares the default (exact) dump with --nonblocking.
# usage: python3 bench/dump_exact.py [--dumps 1000] [--interp PATH ...]
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import pytargets  # noqa: E402

PST = os.path.join(HERE, "..", "pystitch")
BURN = "while True: pass"


def run(interp, dumps):
    t = pytargets.Target(pytargets.Interp("bench", interp), "storm.py")
    burners = [subprocess.Popen([sys.executable, "-c", BURN])
               for _ in range(2)]
    try:
        while t.readline().strip() != "ready":
            pass
        for mode, extra in (("exact", []), ("nonblocking", ["--nonblocking"])):
            have = exist = named = 0
            t0 = time.time()
            for _ in range(dumps):
                r = subprocess.run([PST, "dump", "--json", "-p", str(t.pid)]
                                   + extra, capture_output=True)
                if r.returncode != 0:
                    raise RuntimeError(r.stderr.decode(errors="replace"))
                for th in json.loads(r.stdout.decode("utf-8"))["threads"]:
                    if not th["python"]:
                        continue
                    exist += 1
                    have += bool(th["frames"]) and not th["error"]
                    named += th["name"].startswith("storm-") or \
                        th["name"] == "MainThread"
            took = time.time() - t0
            print("%-40s %-12s %d dumps: %d of %d thread stacks (%.3f%%), "
                  "%d named, %.1f ms per dump" % (
                      interp, mode, dumps, have, exist,
                      100.0 * have / max(exist, 1), named,
                      1000 * took / dumps))
            sys.stdout.flush()
    finally:
        for b in burners:
            b.kill()
        t.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dumps", type=int, default=1000)
    ap.add_argument("--interp", action="append")
    a = ap.parse_args()
    for interp in a.interp or ["/root/.pyenv/versions/3.12.1/bin/python3.12",
                               "/root/.pyenv/versions/3.9.18/bin/python3.9"]:
        run(interp, a.dumps)


if __name__ == "__main__":
    main()
