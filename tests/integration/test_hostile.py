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

SPIN = ("import time\nt = time.time()\n"
        "while time.time() - t < %s: pass\n")
NOBODY = 65534


def record_spin(args, seconds="1", cwd=None, timeout=60):
    """`pystitch record -d SECONDS ARGS -- python -c SPIN`, its output
    captured."""
    argv = [PST, "record", "-d", seconds] + list(args) + [
        "--", local_interp().exe, "-c", SPIN % (float(seconds) + 2)]
    try:
        return subprocess.run(argv, capture_output=True, timeout=timeout,
                              cwd=cwd)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(
            e.cmd, None, e.stdout or b"", (e.stderr or b"") + b"timed out")


def shared_dir(tag):
    """A directory like /tmp (sticky, everyone may create in it), with a
    FIFO of another user (nobody) in it, its read side open (non-blocking:
    anything written to it waits there). Returns (dir, fifo, read fd)."""
    d = os.path.join(TMP, "shared-" + tag)
    os.mkdir(d)
    os.chmod(d, 0o1777)
    fifo = os.path.join(d, "trap")
    os.mkfifo(fifo, 0o666)
    os.lchown(fifo, NOBODY, NOBODY)
    return d, fifo, os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)


def plant(link, to):
    """A symlink of another user (nobody) at link, pointing at to."""
    os.symlink(to, link)
    os.lchown(link, NOBODY, NOBODY)


def drained(fd):
    """Bytes waiting in the non-blocking descriptor fd."""
    got = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return got
        if not chunk:
            return got
        got += chunk


def check_planted_output():
    """-o at a FIFO or link another user planted in /tmp: nothing through it
    (a root file behind a link flipping to and from the FIFO stays as it
    was)."""
    if os.geteuid() != 0:
        return skip("needs root (files of another user)")
    if not local_interp():
        return skip("no local interpreter")
    d, fifo, rfd = shared_dir("planted")
    problems = []
    try:
        # The FIFO itself as -o: refused before recording.
        r = record_spin(["-f", "folded", "-o", fifo], seconds="0.3")
        err = r.stderr.decode(errors="replace")
        if r.returncode != 2 or "another user" not in err:
            problems.append("-o FIFO of another user: exit %s: %s" %
                            (r.returncode, err[-300:]))
        # A link to it: replaced by the profile.
        out = os.path.join(d, "out.folded")
        plant(out, fifo)
        r = record_spin(["-f", "folded", "-o", out], seconds="0.5")
        if r.returncode != 0 or os.path.islink(out) or \
                not os.path.isfile(out):
            problems.append("link to the FIFO: exit %s, %s" % (
                r.returncode, r.stderr.decode(errors="replace")[-300:]))
        got = drained(rfd)
        if got:
            problems.append("the FIFO got %d bytes: %r" % (len(got),
                                                           got[:80]))
        # A link flipping between the FIFO and root's 0600 file.
        victim = os.path.join(TMP, "victim-planted")
        with open(victim, "w") as f:
            f.write("precious\n")
        os.chmod(victim, 0o600)
        flip = os.path.join(d, "flip.folded")
        stop_flip = []

        def flipper():
            k = 0
            while not stop_flip:
                tmp = os.path.join(d, ".flip%d" % (k % 2))
                try:
                    plant(tmp, victim if k % 2 else fifo)
                    os.rename(tmp, flip)
                except OSError:
                    pass
                k += 1
        import threading
        th = threading.Thread(target=flipper)
        th.start()
        try:
            for _ in range(6):
                record_spin(["-f", "folded", "-o", flip], seconds="0.2")
                with open(victim) as f:
                    if f.read() != "precious\n":
                        break
        finally:
            stop_flip.append(1)
            th.join()
        with open(victim) as f:
            if f.read() != "precious\n":
                problems.append("root's file behind the flipping link was "
                                "overwritten")
        got = drained(rfd)
        if got:
            problems.append("the FIFO got %d bytes through the flipping "
                            "link" % len(got))
    finally:
        os.close(rfd)
    return "\n".join(problems)


def check_planted_rotate():
    """--rotate: links planted at the windows' names get nothing
    through them."""
    if os.geteuid() != 0:
        return skip("needs root (files of another user)")
    if not local_interp():
        return skip("no local interpreter")
    d, fifo, rfd = shared_dir("rotate")
    victim = os.path.join(TMP, "victim-rotate")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.chmod(victim, 0o600)
    # "%%" is a strftime field giving "%": every window has the same name,
    # so they are rot%.folded, rot%-1.folded, rot%-2.folded...
    names = ["rot%.folded"] + ["rot%%-%d.folded" % k for k in range(1, 12)]
    for k, n in enumerate(names):
        plant(os.path.join(d, n), fifo if k % 2 == 0 else victim)
    try:
        r = record_spin(["-f", "folded", "--rotate", "0.3", "-o",
                         os.path.join(d, "rot%%.folded")], seconds="1.3")
        problems = []
        err = r.stderr.decode(errors="replace")
        m = re.search(r"rotate: wrote (\d+) files", err)
        if r.returncode != 0 or not m or int(m.group(1)) < 3:
            problems.append("exit %s: %s" % (r.returncode, err[-400:]))
        got = drained(rfd)
        if got:
            problems.append("the FIFO got %d bytes" % len(got))
        with open(victim) as f:
            if f.read() != "precious\n":
                problems.append("root's file behind a link was overwritten")
        for n in names[:3]:
            if os.path.islink(os.path.join(d, n)):
                problems.append("%s still a link after its window" % n)
        return "\n".join(problems)
    finally:
        os.close(rfd)


def check_output_own():
    """-o -, /dev/stdout and a FIFO of our own get the profile
    (stdout; the FIFO's reader; without a reader a clear error)."""
    if not local_interp():
        return skip("no local interpreter")
    problems = []
    cwd = os.path.join(TMP, "own")
    os.mkdir(cwd)
    for name in ("-", "/dev/stdout"):
        r = record_spin(["-f", "folded", "-o", name], seconds="0.5",
                        cwd=cwd)
        if r.returncode != 0 or b"<module>" not in r.stdout:
            problems.append("-o %s: exit %s, %d bytes on stdout: %s" % (
                name, r.returncode, len(r.stdout),
                r.stderr.decode(errors="replace")[-300:]))
    if os.listdir(cwd):
        problems.append("files created: %s" % os.listdir(cwd))
    # Our own FIFO, in a shared directory too: the rule's other side.
    d = os.path.join(TMP, "shared-own")
    os.mkdir(d)
    os.chmod(d, 0o1777)
    fifo = os.path.join(d, "mine")
    os.mkfifo(fifo, 0o600)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        r = record_spin(["-f", "folded", "-o", fifo], seconds="0.5")
        got = drained(rfd)
        if r.returncode != 0 or b"<module>" not in got:
            problems.append("own FIFO: exit %s, got %d bytes: %s" % (
                r.returncode, len(got),
                r.stderr.decode(errors="replace")[-300:]))
    finally:
        os.close(rfd)
    # Without a reader: a clear error, no hang.
    r = record_spin(["-f", "folded", "-o", fifo], seconds="0.3", timeout=15)
    err = r.stderr.decode(errors="replace")
    if r.returncode != 1 or "nothing reads it" not in err:
        problems.append("FIFO without reader: exit %s: %s" % (
            r.returncode, err[-300:]))
    return "\n".join(problems)


def nobody_python():
    """A local Python that nobody may run (the interpreters under test
    first, else the system's python3), or None."""
    found, _ = pytargets.interpreters()
    exes = [i.exe for i in reversed(found)
            if not i.rootfs and "freethreaded" not in i.label]
    for exe in exes + ["/usr/bin/python3"]:
        if not exe.startswith("/root/") and os.access(exe, os.X_OK):
            return exe
    return None


def check_push_secrets():
    """Push secrets: not in the command's environment or /proc, not dumpable
    (from the environment: not in -- COMMAND's nor in pystitch's
    /proc/PID/environ; pystitch not dumpable while it holds them)."""
    import pushrecv
    interp = local_interp()
    if not interp:
        return skip("no local interpreter")
    recv = pushrecv.Receiver()
    env = dict(os.environ, PYSTITCH_PUSH_TOKEN="tok-h0stile-1",
               PYSTITCH_PUSH_BASIC_AUTH="bob:pw-h0stile-2")
    code = ("import os, time\n"
            "print('CHILD', os.environ.get('PYSTITCH_PUSH_TOKEN'),"
            " os.environ.get('PYSTITCH_PUSH_BASIC_AUTH'), flush=True)\n" +
            SPIN % 4)
    problems = []
    try:
        # As nobody, when root: the ownership of /proc/PID/* tells whether
        # the process is dumpable (root's when it is not).
        wrap, who, exe = [], os.geteuid(), interp.exe
        if who == 0 and shutil.which("setpriv") and nobody_python():
            exe = nobody_python()
            wrap = ["setpriv", "--reuid", str(NOBODY), "--regid",
                    str(NOBODY), "--clear-groups"]
            who = NOBODY
        argv = wrap + [PST, "record", "-d", "2", "--push", recv.url,
                       "--push-interval", "0.5", "--", exe, "-c", code]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, cwd="/")
        try:
            line = p.stdout.readline()
            with open("/proc/%d/environ" % p.pid, "rb") as f:
                environ = f.read()
            owner = os.stat("/proc/%d/environ" % p.pid).st_uid
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        if not line.startswith(b"CHILD"):
            problems.append("the command did not run: %r %r" % (
                line, err[-300:]))
        elif b"h0stile" in line:
            problems.append("the command saw the secrets: %r" % line)
        if b"h0stile" in environ:
            problems.append("/proc/PID/environ of pystitch holds them")
        if who != 0 and owner != 0:
            problems.append("pystitch (uid %d) is dumpable while holding "
                            "them (/proc/PID/environ owned by %d)" %
                            (who, owner))
        auth = [r["headers"].get("Authorization") for r in recv.accepted()]
        if p.returncode != 0 or "Bearer tok-h0stile-1" not in auth:
            problems.append("push: exit %s, %s: %s" % (
                p.returncode, auth[:1], err.decode(errors="replace")[-300:]))
        if b"h0stile" in err:
            problems.append("a secret is in the log")
        return "\n".join(problems)
    finally:
        recv.stop()



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
