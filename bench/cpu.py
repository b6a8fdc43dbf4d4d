# cpu.py: pystitch's CPU time per thread-sample and system calls per
# thread-sample, for two builds side by side on the same target, in
# alternating runs (the machine's noise hits both alike): the 8-thread
# counter target (tests/targets/counter.py, 30 frames deep), `record
# --idle` (every thread read at every tick) at each rate.
# usage: python3 bench/cpu.py [--base PATH] [--rates 1000,2000] [--rounds 5]
#                             [--seconds 3] [--interp PATH] [--mode MODE]
#                             [--rootfs DIR] (the interpreter in that rootfs,
#                             as the tests run sid's: PATH inside it)
# MODE: idle (--idle, every thread read each tick), active (the default:
# running threads only), native (--native --idle) or all (--all --idle,
# the target found by --match: the sandbox's system-call filter on).
# --base-args ARGS: more options for the base build's runs only (e.g.
# "--no-sandbox" with --base ./pystitch: the filter's own cost);
# --base-mode MODE: the base build's runs in another mode (e.g. exception
# against idle, with --target exceptions.py); --target SCRIPT [ARGS]: the
# target instead of counter.py 8 30.
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

NEW = os.path.join(HERE, "..", "pystitch")
MODES = {"idle": ["--idle"], "active": [], "native": ["--native", "--idle"],
         "all": ["--all", "--match", "counter[.]py", "--idle"],
         "exception": ["--mode", "exception"]}


def run(pst, pid, rate, seconds, extra, strace=False):
    """(CPU seconds, thread-samples, syscalls {name: n}) of one record."""
    cmd = [pst, "record", "-r", str(rate), "-d", str(seconds), "-f",
           "folded", "-o", "/tmp/pst-cpu.folded"] + extra
    if "--all" not in extra:
        cmd[2:2] = ["-p", str(pid)]
    calls = {}
    if strace:
        cmd = ["strace", "-f", "-c", "-e",
               "trace=process_vm_readv,pread64,ptrace,wait4"] + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    err = r.stderr.decode(errors="replace")
    m = re.search(r"wrote .*?: (\d+) samples", err)
    if not m:
        raise RuntimeError("record failed: %s" % err[-500:])
    for line in err.splitlines():
        f = line.split()
        if len(f) >= 5 and f[-1] in ("process_vm_readv", "pread64",
                                     "ptrace", "wait4"):
            calls[f[-1]] = int(f[3])
    cpu = (after.ru_utime + after.ru_stime) - \
        (before.ru_utime + before.ru_stime)
    return cpu, int(m.group(1)), calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="/work/wt-base/pystitch",
                    help="the build to compare with")
    ap.add_argument("--rates", default="1000,2000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--mode", default="idle", choices=sorted(MODES))
    ap.add_argument("--interp", default="/root/.pyenv/versions/3.12.1/bin/"
                    "python3.12")
    ap.add_argument("--rootfs", default=None)
    ap.add_argument("--base-args", default="")
    ap.add_argument("--base-mode", default=None, choices=sorted(MODES))
    ap.add_argument("--target", default="counter.py 8 30")
    a = ap.parse_args()
    builds = [("base", a.base), ("new", NEW)]
    modes = {"base": MODES[a.base_mode or a.mode], "new": MODES[a.mode]}
    extra = {"base": modes["base"] + a.base_args.split(),
             "new": modes["new"]}
    target = a.target.split()
    t = pytargets.Target(pytargets.Interp("bench", a.interp, a.rootfs),
                         target[0], target[1:])
    try:
        t.readline()
        for rate in [int(r) for r in a.rates.split(",")]:
            us = {b: [] for b, _ in builds}
            for _ in range(a.rounds):
                for name, pst in builds:
                    cpu, n, _ = run(pst, t.pid, rate, a.seconds,
                                    extra[name])
                    us[name].append(1e6 * cpu / max(n, 1))
            line = "%5d Hz %-6s:" % (rate, a.mode)
            for name, pst in builds:
                _, n, calls = run(pst, t.pid, rate, 1, extra[name],
                                  strace=True)
                per = ", ".join("%s %.2f" % (k, v / max(n, 1))
                                for k, v in sorted(calls.items()))
                line += "  %s %.1f us (%s per thread-sample)" % (
                    name, statistics.median(us[name]), per)
            ratio = statistics.median(us["new"]) / statistics.median(
                us["base"])
            print(line + "  new/base %.2f" % ratio)
            sys.stdout.flush()
    finally:
        t.stop()


if __name__ == "__main__":
    main()
