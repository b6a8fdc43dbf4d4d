# test_errors.py: bad input gets a one-line error naming the problem and the
# fix, a distinct documented exit code, and the target keeps running (never
# left in state T). Prints TAP lines and "N passed, M failed, K skipped".
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytargets  # noqa: E402
import tap  # noqa: E402

PST = os.environ.get("PST", "./pystitch")
TAP = tap.Tap()

# Exit codes documented in README.md, pystitch --help and the man page.
EXIT_USAGE, EXIT_NO_PROCESS, EXIT_PERMISSION = 2, 3, 4
EXIT_NOT_PYTHON, EXIT_SELF, EXIT_TRACED = 5, 7, 8


report = TAP.report


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, timeout=60, **kw)


def state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def expect(name, r, code, words, target=None):
    err = r.stderr.decode(errors="replace").strip()
    problems = []
    if r.returncode != code:
        problems.append("exit %d, want %d" % (r.returncode, code))
    if len(err.splitlines()) != 1:
        problems.append("want one line on stderr, got: %r" % err)
    for w in words:
        if w not in err:
            problems.append("message lacks %r: %s" % (w, err))
    if r.stdout:
        problems.append("stdout not empty: %r" % r.stdout[:200])
    if target is not None:
        time.sleep(0.1)
        st = state(target)
        if st in "tT":
            problems.append("target left in state %s" % st)
    report(not problems, name, "\n".join(problems))


def free_pid():
    with open("/proc/sys/kernel/pid_max") as f:
        pid = int(f.read()) - 1
    while os.path.exists("/proc/%d" % pid):
        pid -= 1
    return pid


def record_bad_input():
    """record: bad values and output paths fail before any recording,
    with nothing written."""
    tmp = tempfile.mkdtemp(prefix="pst-err-")
    out = os.path.join(tmp, "x.folded")
    for val in ("0", "-5", "abc", "1e9", "nan"):
        expect("record --rate %s" % val,
               run([PST, "record", "--rate", val, "-p", "1", "-o", out]),
               EXIT_USAGE, ["--rate", val])
    for val in ("0", "-1", "soon"):
        expect("record --duration %s" % val,
               run([PST, "record", "-d", val, "-p", "1", "-o", out]),
               EXIT_USAGE, ["--duration", val])
    expect("record unknown format",
           run([PST, "record", "-f", "gif", "-p", "1", "-o", out]),
           EXIT_USAGE, ["--format", "gif"])
    expect("record output in a missing directory",
           run([PST, "record", "-p", "1", "-o",
                os.path.join(tmp, "no", "x.svg")]),
           EXIT_USAGE, ["does not exist"])
    expect("record output is a directory",
           run([PST, "record", "-p", "1", "-o", tmp]), EXIT_USAGE,
           ["is a directory"])
    expect("record command that does not exist",
           run([PST, "record", "-o", out, "--",
                "/nonexistent/pystitch-no-such-command"]),
           EXIT_NO_PROCESS, ["command not found"])
    if os.listdir(tmp):
        report(False, "record bad input wrote nothing", str(os.listdir(tmp)))
    shutil.rmtree(tmp, ignore_errors=True)


def traced_by_strace():
    """A target another debugger (strace) already traces."""
    if not shutil.which("strace"):
        report(None, "already traced", "strace not installed")
        return
    sleeper = subprocess.Popen([sys.executable, "-c",
                                "import time; time.sleep(600)"])
    tracer = subprocess.Popen(["strace", "-q", "-o", "/dev/null", "-p",
                               str(sleeper.pid)])
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            with open("/proc/%d/status" % sleeper.pid) as f:
                if "TracerPid:\t0\n" not in f.read():
                    break
            time.sleep(0.05)
        # No state check: strace itself stops the target (state t) at each
        # of its system calls.
        expect("already traced by another debugger",
               run([PST, "dump", "-p", str(sleeper.pid)]), EXIT_TRACED,
               ["already traced", "strace"])
    finally:
        tracer.kill()
        tracer.wait()
        sleeper.kill()
        sleeper.wait()


def main():
    expect("no such pid", run([PST, "dump", "-p", str(free_pid())]),
           EXIT_NO_PROCESS, ["no such process"])
    expect("pid not a number", run([PST, "dump", "-p", "12x"]),
           EXIT_USAGE, ["--pid", "12x"])
    expect("unknown command", run([PST, "frobnicate"]), EXIT_USAGE,
           ["unknown command"])
    expect("missing pid", run([PST, "dump"]), EXIT_USAGE, ["--pid"])
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        expect("not a python process",
               run([PST, "dump", "-p", str(sleeper.pid)]), EXIT_NOT_PYTHON,
               ["not a Python process"], target=sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
    record_bad_input()
    traced_by_strace()
    # exec replaces the shell, so $$ is pystitch's own pid.
    expect("own pid", run(["sh", "-c", 'exec "$0" dump -p $$', PST]),
           EXIT_SELF, ["own pid"])
    found, _ = pytargets.interpreters()
    local = [i for i in found if not i.rootfs]
    user = None
    for cand in ("nobody", "daemon"):
        try:
            user = pwd.getpwnam(cand)
            break
        except KeyError:
            pass
    if os.geteuid() != 0:
        report(None, "permission denied", "needs root to run a root target")
    elif not local or user is None or not shutil.which("setpriv"):
        report(None, "permission denied", "no interpreter, user or setpriv")
    else:
        t = pytargets.Target(local[-1], "threads.py")
        try:
            while t.readline().strip() != "ready":
                pass
            r = run(["setpriv", "--reuid=%d" % user.pw_uid,
                     "--regid=%d" % user.pw_gid, "--clear-groups",
                     PST, "dump", "-p", str(t.pid)])
            expect("permission denied", r, EXIT_PERMISSION,
                   ["permission denied", "CAP_SYS_PTRACE", "SYS_PTRACE",
                    "ptrace_scope"], target=t.pid)
        finally:
            t.stop()
    return TAP.finish()


if __name__ == "__main__":
    sys.exit(main())
