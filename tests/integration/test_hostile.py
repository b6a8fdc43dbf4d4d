# test_hostile.py: pystitch as a root agent among hostile targets (issue
# 20). Each check plays a tenant that controls its own process, files and
# names (a container made with unshare + pivot_root, ctypes scribbling on
# its own memory, crafted ELF files) and asserts that pystitch neither
# hangs, crashes, opens a host file for it, writes through a planted link,
# leaks a secret, keeps privileges it does not need, nor lets its names
# reach a terminal raw. Prints TAP lines and "N passed, M failed, K skipped".
#
# A check returns "" (passed), a text saying what went wrong (failed), or
# None (not applicable here: the reason is printed). Checks are found by
# name: every function called check_* runs, in the order of this file.
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytargets  # noqa: E402
import tap  # noqa: E402

PST = os.environ.get("PST", "./pystitch")
BUILD = os.environ.get("PST_BUILDDIR", os.path.dirname(os.path.abspath(PST)))
TAP = tap.Tap()
TMP = tempfile.mkdtemp(prefix="pst-hostile-")
SKIP_WHY = {}


def skip(why):
    """Returns None from a check after recording why it does not apply."""
    SKIP_WHY[sys._getframe(1).f_code.co_name] = why
    return None


def local_interp():
    """The newest local (not containerised) GIL interpreter, or None."""
    found, _ = pytargets.interpreters()
    local = [i for i in found if not i.rootfs and "freethreaded" not in
             i.label]
    return local[-1] if local else None


def pystitch(args, timeout=60, env=None, **kw):
    """Runs pystitch; returns the CompletedProcess (stdout and stderr as
    bytes). A run past `timeout` is killed and returned with returncode
    None and the words "timed out" in its stderr."""
    try:
        return subprocess.run([PST] + list(args), capture_output=True,
                              timeout=timeout, env=env, **kw)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(
            e.cmd, None, e.stdout or b"",
            (e.stderr or b"") + b"\ntimed out after %ds" % timeout)


def spawn(interp, code, env=None):
    """A python process running `code` (which should print "ready" once
    set up); returns the Popen after that line."""
    p = subprocess.Popen([interp.exe, "-u", "-c", code],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    line = p.stdout.readline()
    if not line.startswith(b"ready"):
        p.kill()
        raise RuntimeError("target did not start: %r %r" %
                           (line, p.stderr.read()[-2000:]))
    return p


def stop(p):
    try:
        p.kill()
    except OSError:
        pass
    p.wait()


# ---- files a target names (native/debuginfo.c, proc/maps.c, elf/elf.c) ----


# ---- output, secrets and privileges (output/writer.c, cli/) ----


# ---- names and limits (cli/ text output, python/, consumer/) ----


def main():
    checks = [(n, f) for n, f in list(globals().items())
              if n.startswith("check_") and callable(f)]
    checks.sort(key=lambda nf: nf[1].__code__.co_firstlineno)
    for name, fn in checks:
        start = time.time()
        try:
            err = fn()
        except Exception as e:  # a check's own failure is its result
            err = "%s: %s" % (type(e).__name__, e)
        label = (fn.__doc__ or name).strip().splitlines()[0]
        label += " (%.1f s)" % (time.time() - start)
        if err is None:
            TAP.report(None, label, SKIP_WHY.get(name, "not applicable here"))
        else:
            TAP.report(not err, label, err)
    shutil.rmtree(TMP, ignore_errors=True)
    return TAP.finish()


if __name__ == "__main__":
    sys.exit(main())
