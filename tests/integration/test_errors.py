# test_errors.py: bad input gets a one-line error naming the problem and the
# fix, a distinct documented exit code, and the target keeps running (never
# left in state T). Prints TAP lines and "N passed, M failed, K skipped".
import os
import pwd
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytargets  # noqa: E402
import tap  # noqa: E402
from tap import PST, pystitch, tmpdir  # noqa: E402

TAP = tap.Tap()

# Exit codes documented in README.md, pystitch --help and the man page.
EXIT_USAGE, EXIT_NO_PROCESS, EXIT_PERMISSION = 2, 3, 4
EXIT_NOT_PYTHON, EXIT_SELF, EXIT_TRACED = 5, 7, 8


report = TAP.report


def run(argv):
    """Runs a command that runs pystitch (sh -c ...), output captured."""
    return subprocess.run(argv, capture_output=True, timeout=60)


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
    tmp = tmpdir("err")
    out = os.path.join(tmp, "x.folded")
    for val in ("0", "-5", "abc", "1e9", "nan"):
        expect("record --rate %s" % val,
               pystitch(["record", "--rate", val, "-p", "1", "-o", out]),
               EXIT_USAGE, ["--rate", val])
    for val in ("0", "-1", "soon", "1e9"):
        expect("record --duration %s" % val,
               pystitch(["record", "-d", val, "-p", "1", "-o", out]),
               EXIT_USAGE, ["--duration", val])
    expect("record unknown option",
           pystitch(["record", "--frobnicate", "-p", "1", "-o", out]),
           EXIT_USAGE, ["unknown", "--frobnicate"])
    for val in ("abc", "12x", "-3", "1,,x"):
        expect("record --pid %s" % val,
               pystitch(["record", "-p", val, "-o", out]), EXIT_USAGE,
               ["--pid", val])
    expect("record no such pid",
           pystitch(["record", "-p", str(free_pid()), "-o", out]),
           EXIT_NO_PROCESS, ["no such process"])
    expect("record unknown format",
           pystitch(["record", "-f", "gif", "-p", "1", "-o", out]),
           EXIT_USAGE, ["--format", "gif"])
    expect("record output in a missing directory",
           pystitch(["record", "-p", "1", "-o",
                os.path.join(tmp, "no", "x.svg")]),
           EXIT_USAGE, ["does not exist"])
    expect("record output is a directory",
           pystitch(["record", "-p", "1", "-o", tmp]), EXIT_USAGE,
           ["is a directory"])
    expect("record command that does not exist",
           pystitch(["record", "-o", out, "--",
                "/nonexistent/pystitch-no-such-command"]),
           EXIT_NO_PROCESS, ["command not found"])
    if os.listdir(tmp):
        report(False, "record bad input wrote nothing", str(os.listdir(tmp)))
    # A profile already there is left as it was by a failed run.
    old = os.path.join(tmp, "old.folded")
    with open(old, "w") as f:
        f.write("old profile\n")
    for argv in (["-r", "0", "-p", "1"], ["-p", str(free_pid())],
                 ["--", "/nonexistent/pystitch-no-such-command"]):
        r = pystitch(["record", "-o", old] + argv)
        with open(old) as f:
            kept = f.read() == "old profile\n"
        report(r.returncode != 0 and kept and os.listdir(tmp) ==
               ["old.folded"], "record %s keeps the old output" % argv[-1],
               "exit %d, kept %s, files %s" % (r.returncode, kept,
                                               os.listdir(tmp)))
    shutil.rmtree(tmp, ignore_errors=True)


def zombie():
    """A zombie (exited, not reaped: we do not wait for it)."""
    z = subprocess.Popen(["sh", "-c", "exit 0"])
    deadline = time.time() + 10
    while state(z.pid) != "Z" and time.time() < deadline:
        time.sleep(0.01)
    tmp = tmpdir("err")
    out = os.path.join(tmp, "x.folded")
    try:
        expect("dump of a zombie", pystitch(["dump", "-p", str(z.pid)]),
               EXIT_NO_PROCESS, ["zombie"])
        expect("record of a zombie",
               pystitch(["record", "-p", str(z.pid), "-o", out]),
               EXIT_NO_PROCESS, ["zombie"])
        if os.listdir(tmp):
            report(False, "record of a zombie wrote nothing",
                   str(os.listdir(tmp)))
    finally:
        z.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def unprivileged_user():
    """(pwd entry of nobody or daemon, or None, why)."""
    if os.geteuid() != 0:
        return None, "needs root to run as another user"
    if not shutil.which("setpriv"):
        return None, "setpriv not installed"
    for cand in ("nobody", "daemon"):
        try:
            return pwd.getpwnam(cand), ""
        except KeyError:
            pass
    return None, "no user nobody or daemon"


def as_user(user, args):
    """pystitch ARGS run as user."""
    return pystitch(args, wrapper=["setpriv", "--reuid=%d" % user.pw_uid,
                                   "--regid=%d" % user.pw_gid,
                                   "--clear-groups"])


def read_only_output():
    """Output directories that cannot be written: one the user may not
    write to, and a read-only file system."""
    user, why = unprivileged_user()
    tmp = tmpdir("err")
    os.chmod(tmp, 0o755)  # root's, not writable by the user
    if user is None:
        report(None, "record output in a directory not writable", why)
    else:
        expect("record output in a directory not writable",
               as_user(user, ["record", "-p", "1", "-o",
                              os.path.join(tmp, "x.svg")]),
               EXIT_USAGE, ["not writable", tmp])
    if os.geteuid() != 0 or not shutil.which("unshare"):
        report(None, "record output on a read-only file system",
               "needs root and unshare to mount a read-only tmpfs")
    else:
        r = run(["unshare", "--mount", "sh", "-c",
                 'mount -t tmpfs -o ro none "$1" && exec "$0" record -p 1 '
                 '-o "$1/x.svg"', PST, tmp])
        if b"mount:" in r.stderr:
            report(None, "record output on a read-only file system",
                   r.stderr.decode(errors="replace").strip())
        else:
            expect("record output on a read-only file system", r,
                   EXIT_USAGE, ["not writable", "Read-only file system"])
    if os.listdir(tmp):
        report(False, "nothing written in the read-only directories",
               str(os.listdir(tmp)))
    shutil.rmtree(tmp, ignore_errors=True)


def traced_by_strace():
    """A target another debugger (strace) already traces."""
    if not shutil.which("strace"):
        report(None, "already traced", "strace not installed")
        return
    sleeper = subprocess.Popen(
        [sys.executable, "-u", "-c",
         "import time; print('ready'); time.sleep(600)"],
        stdout=subprocess.PIPE)
    sleeper.stdout.readline()  # started: strace attaches to a settled target
    tracer = subprocess.Popen(["strace", "-q", "-o", "/dev/null", "-p",
                               str(sleeper.pid)])

    def traced():
        with open("/proc/%d/status" % sleeper.pid) as f:
            return "TracerPid:\t0\n" not in f.read()

    try:
        deadline = time.time() + 10
        while time.time() < deadline and not traced():
            time.sleep(0.05)
        if not traced():
            report(None, "already traced by another debugger",
                   "strace did not attach within 10 s")
            return
        time.sleep(0.2)  # strace has attached every thread
        # No state check: strace itself stops the target (state t) at each
        # of its system calls.
        expect("already traced by another debugger",
               pystitch(["dump", "-p", str(sleeper.pid)]), EXIT_TRACED,
               ["already traced", "strace"])
    finally:
        tracer.kill()
        tracer.wait()
        sleeper.kill()
        sleeper.wait()


def main():
    expect("no such pid", pystitch(["dump", "-p", str(free_pid())]),
           EXIT_NO_PROCESS, ["no such process"])
    expect("pid not a number", pystitch(["dump", "-p", "12x"]),
           EXIT_USAGE, ["--pid", "12x"])
    expect("unknown command", pystitch(["frobnicate"]), EXIT_USAGE,
           ["unknown command"])
    expect("missing pid", pystitch(["dump"]), EXIT_USAGE, ["--pid"])
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        expect("not a python process",
               pystitch(["dump", "-p", str(sleeper.pid)]), EXIT_NOT_PYTHON,
               ["not a Python process"], target=sleeper.pid)
        tmp = tmpdir("err")
        expect("record of a process that is not python",
               pystitch(["record", "-p", str(sleeper.pid), "-o",
                    os.path.join(tmp, "x.svg")]), EXIT_NOT_PYTHON,
               ["not a Python process"], target=sleeper.pid)
        if os.listdir(tmp):
            report(False, "record of a non-Python process wrote nothing",
                   str(os.listdir(tmp)))
        shutil.rmtree(tmp, ignore_errors=True)
    finally:
        sleeper.kill()
        sleeper.wait()
    record_bad_input()
    zombie()
    read_only_output()
    traced_by_strace()
    # exec replaces the shell, so $$ is pystitch's own pid.
    expect("own pid", run(["sh", "-c", 'exec "$0" dump -p $$', PST]),
           EXIT_SELF, ["own pid"])
    found, _ = pytargets.interpreters()
    local = [i for i in found if not i.rootfs]
    user, why = unprivileged_user()
    if user is None or not local:
        report(None, "permission denied", why or "no interpreter")
    else:
        t = pytargets.Target(local[-1], "threads.py")
        tmp = tmpdir("err")
        os.chmod(tmp, 0o777)  # the user's to write: only ptrace is denied
        words = ["permission denied", "CAP_SYS_PTRACE", "--cap-add "
                 "SYS_PTRACE", "kernel.yama.ptrace_scope"]
        try:
            while t.readline().strip() != "ready":
                pass
            expect("permission denied",
                   as_user(user, ["dump", "-p", str(t.pid)]),
                   EXIT_PERMISSION, words, target=t.pid)
            expect("record permission denied",
                   as_user(user, ["record", "-p", str(t.pid), "-o",
                                  os.path.join(tmp, "x.svg")]),
                   EXIT_PERMISSION, words, target=t.pid)
            if os.listdir(tmp):
                report(False, "record permission denied wrote nothing",
                       str(os.listdir(tmp)))
        finally:
            t.stop()
            shutil.rmtree(tmp, ignore_errors=True)
    return TAP.finish()


if __name__ == "__main__":
    sys.exit(main())
