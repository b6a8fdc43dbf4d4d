# tap.py: what every integration suite shares: TAP output ending with the
# summary line tests/run.sh adds up ("N passed, M failed, K skipped"), the
# paths tests/run.sh hands over (PST, BUILD, SRC), running pystitch with its
# output captured, a check run so that its exception is its failure, and
# whether a process is alive.
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The pystitch binary, the build directory and the source tree (run.sh
# sets PST, PST_BUILDDIR and PST_SRCDIR; the defaults suit a run by hand
# from an in-tree build).
PST = os.environ.get("PST", "./pystitch")
BUILD = os.environ.get("PST_BUILDDIR", os.path.dirname(os.path.abspath(PST)))
SRC = os.environ.get("PST_SRCDIR", os.path.join(HERE, "..", ".."))
NOT_APPLICABLE = "not applicable here"


def tmpdir(tag):
    """A new scratch directory /tmp/pst-TAG-XXXXXX (the suite removes it)."""
    return tempfile.mkdtemp(prefix="pst-%s-" % tag)


def pystitch(args, timeout=60, env=None, wrapper=(), timed_out=False, **kw):
    """Runs pystitch with args, stdout and stderr captured as bytes, and
    returns the CompletedProcess. env: variables set over this process's
    environment for the run. wrapper: a command pystitch runs under (strace,
    no-vm-readv, sudo ...). kw goes to subprocess.run (cwd, input). A run
    past `timeout` raises subprocess.TimeoutExpired; with timed_out it is
    killed and returned instead, with returncode None and the words "timed
    out" at the end of its stderr."""
    full_env = dict(os.environ, **env) if env else None
    try:
        return subprocess.run(list(wrapper) + [PST] + list(args),
                              capture_output=True, timeout=timeout,
                              env=full_env, **kw)
    except subprocess.TimeoutExpired as e:
        if not timed_out:
            raise
        return subprocess.CompletedProcess(
            e.cmd, None, e.stdout or b"",
            (e.stderr or b"") + b"\ntimed out after %ds" % timeout)


def attempt(fn, *args, **kwargs):
    """fn(*args, **kwargs); an exception it raises (a broken target) is
    returned as its error text: a failure, not a crash."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # a check's own failure is its result
        return "%s: %s" % (type(e).__name__, e)


def alive(pid):
    """Whether pid runs (exists and is neither a zombie nor dead)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except IOError:
        return False


class Tap(object):
    def __init__(self):
        self.results = []

    def report(self, ok, name, why=""):
        """ok: True, False, or None for a skip (why is the reason)."""
        self.results.append(ok)
        n = len(self.results)
        if ok is None:
            print("ok %d - %s # SKIP %s" % (n, name, why))
        else:
            print("%s %d - %s" % ("ok" if ok else "not ok", n, name))
            if not ok:
                for line in why.splitlines():
                    print("#   " + line)
        sys.stdout.flush()

    def check(self, name, fn, *args, timed=False, skip=NOT_APPLICABLE):
        """Runs the check fn(*args) and reports it under name: "" passed,
        a text failed (what went wrong), an exception failed (its text).
        None is a skip with the reason `skip`, or a pass when skip is
        None. timed adds the seconds it took to the name."""
        start = time.time()
        err = attempt(fn, *args)
        if timed:
            name += " (%.1f s)" % (time.time() - start)
        if err is None and skip is not None:
            self.report(None, name, skip)
        else:
            self.report(not err, name, err or "")

    def finish(self):
        """Prints the summary; returns the exit status."""
        passed = sum(1 for r in self.results if r)
        failed = sum(1 for r in self.results if r is False)
        skipped = sum(1 for r in self.results if r is None)
        print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
        return 1 if failed else 0
