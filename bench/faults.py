# faults.py: the long version of tests/integration/test_faults.py, for
# docs/reliability.md: pystitch record killed with SIGKILL --kills times per
# mode at random moments (0-300 ms after its start), thread churn for
# --churn-seconds per mode, signals mid-sample, target behaviours, and the
# exit code and message of every bad input tried. Run as root from the
# build directory after `make check`:
#   python3 bench/faults.py [--kills 100] [--churn-seconds 30] [--seed N]
import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "integration"))
os.environ.setdefault("PST", os.path.join(TOP, "pystitch"))
os.environ.setdefault("PST_BUILDDIR", TOP)
os.environ.setdefault("PST_SRCDIR", TOP)
import pytargets  # noqa: E402
import test_faults as tf  # noqa: E402

PST = os.environ["PST"]


def line(*cols):
    print("| " + " | ".join(str(c) for c in cols) + " |")
    sys.stdout.flush()


def check(name, fn, *args):
    start = time.time()
    try:
        err = fn(*args)
    except Exception as e:
        err = "%s: %s" % (type(e).__name__, e)
    verdict = "n/a" if err is None else "ok" if not err else \
        "FAIL: " + err.replace("\n", "; ")[:300]
    line(name, verdict, "%.1f s" % (time.time() - start))


def bad_inputs():
    """(what, argv, stdin-less run) for every bad input tried."""
    tmp = tempfile.mkdtemp(prefix="pst-bench-bad-")
    out = os.path.join(tmp, "x.folded")
    with open("/proc/sys/kernel/pid_max") as f:
        free = int(f.read()) - 1
    while os.path.exists("/proc/%d" % free):
        free -= 1
    sleeper = subprocess.Popen(["sleep", "600"])
    zombie = subprocess.Popen(["sh", "-c", "exit 0"])
    time.sleep(0.2)
    cases = [("no command", []),
             ("unknown command", ["frobnicate"]),
             ("unknown option (dump)", ["dump", "--frobnicate"]),
             ("unknown option (record)", ["record", "--frobnicate"]),
             ("missing --pid", ["dump"]),
             ("record without target", ["record", "-o", out])]
    for v in ("12x", "abc", "-3", "0", "99999999999"):
        cases.append(("--pid %s (dump)" % v, ["dump", "-p", v]))
        cases.append(("--pid %s (record)" % v,
                      ["record", "-p", v, "-o", out]))
    for v in ("0", "-5", "abc", "1e9", "nan", "inf", ""):
        cases.append(("--rate %r" % v,
                      ["record", "-r", v, "-p", "1", "-o", out]))
    for v in ("0", "-1", "soon", "1e9", "inf"):
        cases.append(("--duration %r" % v,
                      ["record", "-d", v, "-p", "1", "-o", out]))
    cases += [
        ("--format gif", ["record", "-f", "gif", "-p", "1", "-o", out]),
        ("-p and -- together", ["record", "-p", "1", "-o", out, "--",
                                "true"]),
        ("output in a missing directory",
         ["record", "-p", "1", "-o", os.path.join(tmp, "no", "x")]),
        ("output is a directory", ["record", "-p", "1", "-o", tmp]),
        ("command that does not exist",
         ["record", "-o", out, "--", "/nonexistent/cmd"]),
        ("no such pid (dump)", ["dump", "-p", str(free)]),
        ("no such pid (record)", ["record", "-p", str(free), "-o", out]),
        ("zombie (dump)", ["dump", "-p", str(zombie.pid)]),
        ("zombie (record)", ["record", "-p", str(zombie.pid), "-o", out]),
        ("not Python (dump)", ["dump", "-p", str(sleeper.pid)]),
        ("not Python (record)",
         ["record", "-p", str(sleeper.pid), "-o", out]),
        ("own pid", None),
    ]
    line("bad input", "exit", "message")
    line("---", "---", "---")
    for what, argv in cases:
        if argv is None:
            r = subprocess.run(["sh", "-c", 'exec "$0" dump -p $$', PST],
                               capture_output=True, timeout=60)
        else:
            r = subprocess.run([PST] + argv, capture_output=True,
                               timeout=60)
        msg = r.stderr.decode(errors="replace").strip().replace("|", "\\|")
        line(what, r.returncode, msg.replace("\n", " / ")[:160])
    sleeper.kill()
    sleeper.wait()
    zombie.wait()
    left = os.listdir(tmp)
    print("\nfiles written by the bad inputs: %s" % (left or "none"))
    os.rmdir(tmp) if not left else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--churn-seconds", type=float, default=30)
    ap.add_argument("--churn-rate", type=int, default=500)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    found, _ = pytargets.interpreters()
    local = [i for i in found if not i.rootfs]
    interp = local[-1]
    rng = random.Random(a.seed)
    print("pystitch %s, target %s, seed %d, %s\n" % (
        subprocess.run([PST, "--version"], capture_output=True)
        .stdout.decode().split()[-1], interp.label, a.seed,
        time.strftime("%Y-%m-%d")))

    line("mode", "kills survived / tried", "kills while a thread was traced",
         "problems")
    line("---", "---", "---", "---")
    for label, mode in tf.modes():
        st = {}
        err = tf.kill_loop(interp, mode, a.kills, rng, st)
        line(label, "%d / %d" % (st.get("survived", 0), st.get("tried", 0)),
             st.get("traced_at_kill", 0), (err or "none").replace("\n",
                                                                  "; "))
    print()
    line("mode", "threads churned", "in s", "threads sampled",
         "their samples", "wrongly attributed")
    line("---", "---", "---", "---", "---", "---")
    for label, mode in tf.modes():
        fig = {}
        err = tf.check_churn(interp, mode, a.churn_rate, a.churn_seconds,
                             fig)
        line(label, fig.get("churned"), "%.1f" % fig.get("target_s", 0),
             fig.get("threads_sampled"), fig.get("churn_samples"),
             fig.get("wrong"))
        if err:
            print("  problems: " + err.replace("\n", "; "))
    print()
    line("check", "result", "time")
    line("---", "---", "---")
    for label, mode in tf.modes():
        for sig, fmt in ((signal.SIGINT, "folded"),
                         (signal.SIGTERM, "speedscope"),
                         (signal.SIGHUP, "folded")):
            check("%s mid-sample, %s" % (signal.Signals(sig).name, label),
                  tf.check_signal, interp, mode, sig, fmt)
        for name, fn in (("target exits", tf.check_exits),
                         ("target SIGKILLed", tf.check_killed),
                         ("target execs /bin/sleep", tf.check_exec_other),
                         ("target execs python", tf.check_exec_python),
                         ("target forks", tf.check_fork),
                         ("target SIGSTOP/SIGCONT", tf.check_sigstop),
                         ("pid reused", tf.check_pid_reuse)):
            check("%s, %s" % (name, label), fn, interp, mode)
    for i in {id(x): x for x in (local[0], local[-1])}.values():
        check("process_vm_readv forbidden, %s" % i.label,
              tf.check_no_vm_readv, i)
    print()
    bad_inputs()


if __name__ == "__main__":
    main()
