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
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytargets  # noqa: E402
import tap  # noqa: E402
from tap import PST, attempt  # noqa: E402

TAP = tap.Tap()
TMP = tap.tmpdir("hostile")
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


def pystitch(args, timeout=60, **kw):
    """Runs pystitch; returns the CompletedProcess (stdout and stderr as
    bytes). A run past `timeout` is killed and returned with returncode
    None and the words "timed out" in its stderr."""
    return tap.pystitch(args, timeout, timed_out=True, **kw)


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
    """Kills p and, first, its children (unshare --fork's python: killing
    unshare alone would leave it running)."""
    for c in pytargets.children(p.pid):
        try:
            os.kill(c, 9)
        except OSError:
            pass
    try:
        p.kill()
    except OSError:
        pass
    p.wait()


# ---- files a target names (elf/debuginfo.c, proc/maps.c, elf/elf.c) ----


LIB_SRC = r"""
#include <pthread.h>
#include <unistd.h>
volatile unsigned long pst_hostile_counter;
static __attribute__((noinline)) void *pst_hostile_thread(void *arg) {
  (void)arg;
  for (;;)
    pause();
  return 0;
}
int pst_hostile_start(void) {
  pthread_t t;
  return pthread_create(&t, 0, pst_hostile_thread, 0);
}
/* Calls back into Python: a return address into this library stays on
 * the stack while the callback runs. */
__attribute__((noinline)) int pst_hostile_call(int (*fn)(void)) {
  int r = fn();
  pst_hostile_counter++;
  return r;
}
static void *pst_hostile_spin(void *arg) {
  (void)arg;
  for (;;)
    pst_hostile_counter++;
  return 0;
}
int pst_hostile_spin_start(void) {
  pthread_t t;
  return pthread_create(&t, 0, pst_hostile_spin, 0);
}
"""


def build_lib(directory, name, debuglink=None):
    """Builds LIB_SRC as directory/name, stripped, with a .gnu_debuglink
    naming `debuglink` (a file beside it that is removed afterwards, so
    that the caller can put what it likes in its place). None when no
    compiler or binutils is here."""
    for tool in ("gcc", "strip", "objcopy"):
        if not shutil.which(tool):
            return None
    os.makedirs(directory, exist_ok=True)
    src = os.path.join(directory, "lib.c")
    with open(src, "w") as f:
        f.write(LIB_SRC)
    out = os.path.join(directory, name)
    subprocess.check_call(["gcc", "-O1", "-g", "-fPIC", "-shared",
                           "-Wl,--build-id", "-o", out, src, "-lpthread"])
    if debuglink:
        dbg = os.path.join(directory, debuglink)
        subprocess.check_call(["objcopy", "--only-keep-debug", out, dbg])
        subprocess.check_call(["strip", "--strip-debug",
                               "--strip-unneeded", out])
        subprocess.check_call(["objcopy", "--add-gnu-debuglink=" + dbg,
                               out])
        os.unlink(dbg)
    return out


NATIVE_THREAD_TARGET = r"""
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
lib.pst_hostile_start()
time.sleep(0.2)
print("ready")
while True:
    time.sleep(1)
"""


class FifoWatch(object):
    """Tells whether anyone opened a FIFO for reading: a writer opened with
    O_NONBLOCK succeeds only while a reader has it open."""

    def __init__(self, path):
        import threading
        self.path, self.opened, self.done = path, False, False
        self.t = threading.Thread(target=self.poll)
        self.t.daemon = True
        self.t.start()

    def poll(self):
        while not self.done:
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
                self.opened = True
                os.close(fd)
            except OSError:
                pass
            time.sleep(0.005)

    def stop(self):
        self.done = True
        self.t.join()
        return self.opened


def check_fifo_debuglink():
    """A .gnu_debuglink naming a FIFO beside the library: dump and record --all finish"""
    interp = local_interp()
    if not interp:
        return skip("no local interpreter")
    d = os.path.join(TMP, "fifo")
    lib = build_lib(d, "libevil.so", debuglink="evil.debug")
    if not lib:
        return skip("gcc, strip or objcopy missing")
    fifo = os.path.join(d, "evil.debug")
    os.mkfifo(fifo)
    watch = FifoWatch(fifo)
    p = subprocess.Popen([interp.exe, "-u", "-c", NATIVE_THREAD_TARGET, lib],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    problems = []
    try:
        if not p.stdout.readline().startswith(b"ready"):
            return "target did not start: %r" % p.stderr.read()[-2000:]
        r = pystitch(["dump", "-p", str(p.pid)], timeout=20)
        if r.returncode != 0:
            problems.append("dump: exit %s: %s" % (
                r.returncode, r.stderr.decode(errors="replace")[-1500:]))
        out = os.path.join(d, "all.folded")
        r = pystitch(["record", "--all", "--match", "libevil", "-d", "2",
                      "-f", "folded", "-o", out], timeout=30)
        if r.returncode != 0:
            problems.append("record --all: exit %s: %s" % (
                r.returncode, r.stderr.decode(errors="replace")[-1500:]))
        elif not os.path.exists(out):
            problems.append("record --all wrote no profile")
    finally:
        stop(p)
        if watch.stop():
            problems.append("the FIFO was opened for reading")
    return "\n".join(problems)


def container_rootfs():
    root = os.path.join(pytargets.ROOTFS_DIR, "sid-rootfs")
    exe = "/usr/bin/python3.14"
    if os.access(root + exe, os.X_OK):
        return root, exe
    return None, None


def check_container_symlink_to_host():
    """A container's debug file linking to a host FIFO: never opened, dump finishes"""
    root, exe = container_rootfs()
    if not root:
        return skip("no sid rootfs with python3.14 (tests/setup-rootfs.sh)")
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return skip("needs root and unshare")
    inside = "/tmp/pst-evil-%d" % os.getpid()
    d = root + inside
    lib = build_lib(d, "libevil.so", debuglink="evil.debug")
    if not lib:
        return skip("gcc, strip or objcopy missing")
    # On the host, a FIFO at a path the container does not have; in the
    # container, its debug file is an absolute symlink to that path.
    host_fifo = os.path.join(TMP, "host-fifo")
    os.mkfifo(host_fifo)
    os.symlink(host_fifo, os.path.join(d, "evil.debug"))
    # ... and its library's own directory (a path the host has too, with
    # a FIFO there) must not be looked up on the host either.
    host_twin = inside
    made_twin = not os.path.exists(host_twin)
    if made_twin:
        os.makedirs(host_twin)
        os.mkfifo(os.path.join(host_twin, "evil.debug"))
    watches = [FifoWatch(host_fifo)]
    if made_twin:
        watches.append(FifoWatch(os.path.join(host_twin, "evil.debug")))
    p = subprocess.Popen(
        ["unshare", "--pid", "--mount", "--fork", "chroot", root, exe, "-u",
         "-c", NATIVE_THREAD_TARGET, inside + "/libevil.so"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    problems = []
    try:
        if not p.stdout.readline().startswith(b"ready"):
            return "target did not start: %r" % p.stderr.read()[-2000:]
        kids = pytargets.children(p.pid)
        if not kids:
            return "no python under unshare"
        r = pystitch(["dump", "-p", str(kids[0])], timeout=20)
        if r.returncode != 0:
            problems.append("dump: exit %s: %s" % (
                r.returncode, r.stderr.decode(errors="replace")[-1500:]))
    finally:
        stop(p)
        for w in watches:
            if w.stop():
                problems.append("host FIFO %s opened for the container" %
                                w.path)
        if made_twin:
            shutil.rmtree(host_twin, ignore_errors=True)
        shutil.rmtree(d, ignore_errors=True)
    return "\n".join(problems)


TRUNCATE_TARGET = r"""
import _ctypes, ctypes, os, signal, sys
cut_lib, new_lib, gone_lib = sys.argv[1:4]
lib = ctypes.CDLL(cut_lib)
gone = ctypes.CDLL(gone_lib)

def cut(sig, frame):
    os.truncate(cut_lib, 0)  # our own library, while mapped
    # A new thread in a new library, and a library gone: pystitch reloads
    # the maps and drops libunwind's cache, so the truncated library's
    # tables are read again for the return address below.
    ctypes.CDLL(new_lib).pst_hostile_spin_start()
    _ctypes.dlclose(gone._handle)
    print("cut")

signal.signal(signal.SIGUSR1, cut)

@ctypes.CFUNCTYPE(ctypes.c_int)
def spin():
    print("ready")
    n = 0
    while True:  # a return address into the library stays on our stack
        n += 1
    return 0

lib.pst_hostile_call(spin)
"""


def check_truncated_library():
    """A library truncated under record --native: no SIGBUS, a valid profile"""
    interp = local_interp()
    if not interp:
        return skip("no local interpreter")
    d = os.path.join(TMP, "trunc")
    libs = [build_lib(d, name) for name in ("libcut.so", "libnew.so",
                                            "libgone.so")]
    if not all(libs):
        return skip("gcc missing")
    p = subprocess.Popen([interp.exe, "-u", "-c", TRUNCATE_TARGET] + libs,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = os.path.join(d, "cut.folded")
    problems = []
    try:
        if not p.stdout.readline().startswith(b"ready"):
            return "target did not start: %r" % p.stderr.read()[-2000:]
        rec = subprocess.Popen([PST, "record", "--native", "-p", str(p.pid),
                                "-d", "4", "-f", "folded", "-o", out],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1.5)  # the library's module is mapped by now
        os.kill(p.pid, signal.SIGUSR1)
        if not p.stdout.readline().startswith(b"cut"):
            problems.append("the target did not truncate its library")
        try:
            _, err = rec.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            rec.kill()
            _, err = rec.communicate()
            problems.append("record did not finish")
        if rec.returncode != 0:
            problems.append("record: exit %s: %s" % (
                rec.returncode, err.decode(errors="replace")[-1500:]))
        elif not os.path.exists(out) or "spin" not in open(out).read():
            problems.append("no profile with the target's frames")
        elif b"truncated" not in err:
            problems.append("the truncation was not seen (no fault, or not "
                            "counted): %s" % err.decode(errors="replace"))
        if p.poll() is not None:
            problems.append("the target died (status %s)" % p.returncode)
    finally:
        stop(p)
    return "\n".join(problems)



# ---- privileges (sandbox/) ----

# CAP_DAC_READ_SEARCH (2), CAP_SYS_PTRACE (19), CAP_CHECKPOINT_RESTORE (40):
# what reading targets needs (src/sandbox/sandbox.h).
SAMPLING_CAPS = (1 << 2) | (1 << 19) | (1 << 40)


def status_fields(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def check_reduced_privileges():
    """While recording: only the sampling capabilities, NoNewPrivs 1, --all filtered"""
    interp = local_interp()
    if not interp:
        return skip("no local interpreter")
    if os.geteuid() != 0:
        return skip("needs root")
    p = spawn(interp, "print('ready')\nwhile True: pass")
    problems = []
    try:
        for extra, filtered in (([], False), (["--native"], False),
                                (["--all", "--match", "while True"], True)):
            args = ["record", "-v", "-d", "3", "-f", "folded", "-o",
                    os.path.join(TMP, "caps.folded")] + extra
            if "--all" not in extra:
                args += ["-p", str(p.pid)]
            rec = subprocess.Popen([PST] + args, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
            time.sleep(1.5)
            st = status_fields(rec.pid)
            # Capabilities are per thread: every thread of the recorder
            # (libuv's pool, the worker that opens processes and reads
            # symbol tables) must have dropped them too.
            threads = {}
            for tid in os.listdir("/proc/%d/task" % rec.pid):
                try:
                    threads[tid] = status_fields(int(tid))
                except OSError:
                    pass  # ended meanwhile
            _, err = rec.communicate(timeout=30)
            eff = int(st.get("CapEff", "0"), 16)
            bnd = int(st.get("CapBnd", "0"), 16)
            what = " ".join(extra) or "-p"
            if eff & ~SAMPLING_CAPS or bnd & ~SAMPLING_CAPS:
                problems.append("%s: CapEff %x CapBnd %x: more than %x" % (
                    what, eff, bnd, SAMPLING_CAPS))
            for tid, ts in sorted(threads.items()):
                teff = int(ts.get("CapEff", "0"), 16)
                tbnd = int(ts.get("CapBnd", "0"), 16)
                if teff & ~SAMPLING_CAPS or tbnd & ~SAMPLING_CAPS:
                    problems.append("%s: thread %s (%s): CapEff %x CapBnd %x"
                                    % (what, tid, ts.get("Name"), teff, tbnd))
            if not eff & (1 << 19):
                problems.append("%s: CAP_SYS_PTRACE dropped" % what)
            if st.get("NoNewPrivs") != "1":
                problems.append("%s: NoNewPrivs %s" % (what,
                                                       st.get("NoNewPrivs")))
            if filtered and b"no system-call filter in a sanitizer " \
                    b"build" in err:
                filtered = False  # LeakSanitizer needs it so (sandbox.c)
            if (st.get("Seccomp") == "2") != filtered:
                problems.append("%s: Seccomp %s" % (what, st.get("Seccomp")))
            if rec.returncode != 0:
                problems.append("%s: exit %d: %s" % (
                    what, rec.returncode, err.decode(errors="replace")))
    finally:
        stop(p)
    return "\n".join(problems)


def check_only_cap_sys_ptrace():
    """As nobody with only CAP_SYS_PTRACE: dump, record and record --native of root's python"""
    exe = "/usr/bin/python3.11"
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return skip("needs root and setpriv")
    if not os.access(exe, os.X_OK):
        return skip("%s absent" % exe)
    d = os.path.join(TMP, "nobody")
    os.makedirs(d)
    os.chmod(TMP, 0o755)
    os.chmod(d, 0o777)
    p = subprocess.Popen([exe, "-u", "-c",
                          "import threading\n"
                          "def spin():\n    while True: pass\n"
                          "threading.Thread(target=spin, name='spinner')"
                          ".start()\nprint('ready')\nspin()"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534",
                 "--clear-groups", "--inh-caps=-all,+sys_ptrace",
                 "--ambient-caps=+sys_ptrace",
                 "--bounding-set=-all,+sys_ptrace", "--"]
    problems = []
    try:
        if not p.stdout.readline().startswith(b"ready"):
            return "target did not start"
        runs = [("dump", ["dump", "-p", str(p.pid)], None),
                ("record", ["record", "-p", str(p.pid), "-d", "2", "-f",
                            "folded", "-o", d + "/r.folded"], d + "/r.folded"),
                ("record --native", ["record", "--native", "-p", str(p.pid),
                                     "-d", "2", "-f", "folded", "-o",
                                     d + "/n.folded"], d + "/n.folded")]
        for name, args, out in runs:
            r = tap.pystitch(args, wrapper=as_nobody)
            text = r.stdout.decode(errors="replace")
            if r.returncode != 0:
                problems.append("%s: exit %d: %s" % (
                    name, r.returncode, r.stderr.decode(errors="replace")))
            elif out is None and "spinner" not in text:
                problems.append("%s: no thread 'spinner': %s" % (name, text))
            elif out and "spin (" not in open(out).read():
                problems.append("%s: no frame spin in the profile" % name)
    finally:
        stop(p)
    return "\n".join(problems)

# ---- output, secrets and privileges (output/writer.c, cli/) ----

SPIN = ("import time\nt = time.time()\n"
        "while time.time() - t < %s: pass\n")
NOBODY = 65534


def record_spin(args, seconds="1", cwd=None, timeout=60):
    """`pystitch record -d SECONDS ARGS -- python -c SPIN`, its output
    captured."""
    return pystitch(["record", "-d", seconds] + list(args) + [
        "--", local_interp().exe, "-c", SPIN % (float(seconds) + 2)],
        timeout, cwd=cwd)


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

# A terminal title (OSC), a colour (SGR) and CSI as one C1 character: a
# str's U+009B on 3.x (UTF-8 c2 9b), a raw byte 0x9b on 2.7.
BAD_NAME = "\\x1b]0;TITLE\\x07\\x1b[31m\\x9b"
BAD_SEEN = b"\\x1b]0;TITLE\\x07\\x1b[31m"  # how the escaper shows it

# A thread, a function and a file named BAD_NAME, spinning.
NAMES_TARGET = r"""
import sys, threading, time, types
BAD = "%s"
ns = {}
exec(compile("def spin():\n    while True:\n        pass\n",
             "/tmp/" + BAD + ".py", "exec"), ns)
c = ns["spin"].__code__
if sys.version_info[0] == 2:
    c = types.CodeType(c.co_argcount, c.co_nlocals, c.co_stacksize,
                       c.co_flags, c.co_code, c.co_consts, c.co_names,
                       c.co_varnames, c.co_filename, "spin" + BAD,
                       c.co_firstlineno, c.co_lnotab)
else:
    kw = {"co_name": "spin" + BAD}
    if sys.version_info >= (3, 11):
        kw["co_qualname"] = "spin" + BAD
    c = c.replace(**kw)
ns["spin"].__code__ = c
t = threading.Thread(target=ns["spin"], name=BAD)
t.daemon = True
t.start()
print("ready")
time.sleep(60)
""" % BAD_NAME


def interp_version(want):
    """The local interpreter whose label starts with pyenv-WANT., or None
    (absent, or left out by PST_PYTHONS)."""
    found, _ = pytargets.interpreters()
    for i in found:
        if i.label.startswith("pyenv-%s." % want) and not i.rootfs:
            return i
    return None


def names_interps():
    """The newest local interpreter and 2.7 (bytes names): the ones
    present."""
    out = [i for i in (local_interp(), interp_version("2.7")) if i]
    return [i for k, i in enumerate(out) if i not in out[:k]]


def raw_controls(out):
    """What in out (bytes) a terminal would act on: "" when nothing."""
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError as e:
        return "ill-formed UTF-8 %r" % out[max(0, e.start - 20):e.end + 5]
    for k, ch in enumerate(text):
        if (ord(ch) < 0x20 and ch != "\n") or 0x7f <= ord(ch) <= 0x9f:
            return "raw %r in %r" % (ch, text[max(0, k - 30):k + 10])
    return ""


def names_shown(cmds):
    """Runs each (args, times) of cmds against NAMES_TARGET on every
    names_interps() one: no raw control in the output, the escaped name
    at least `times` times and its C1 character escaped. Returns an error
    text, or "" (None when no interpreter)."""
    interps = names_interps()
    if not interps:
        return skip("no local interpreter")
    for interp in interps:
        c1 = b"\\x9b" if "2.7" in interp.label else b"\\u009b"
        p = spawn(interp, NAMES_TARGET)
        try:
            for args, times in cmds:
                r = pystitch(args + ["-p", str(p.pid)], timeout=20)
                what = "%s %s" % (interp.label, args[0])
                if r.returncode != 0:
                    return "%s: exit %s: %s" % (what, r.returncode,
                                                r.stderr[-300:])
                bad = raw_controls(r.stdout) or raw_controls(r.stderr)
                if bad:
                    return "%s: %s" % (what, bad)
                if r.stdout.count(BAD_SEEN) < times or c1 not in r.stdout:
                    return "%s: %r shown %d times (not %d), %r %s: %r" % (
                        what, BAD_SEEN, r.stdout.count(BAD_SEEN), times, c1,
                        "shown" if c1 in r.stdout else "not shown",
                        r.stdout[-600:])
        finally:
            stop(p)
    return ""


def check_names_escaped_dump():
    """dump and info: a thread, function and file named with terminal escapes print escaped"""
    # dump: the thread, the function, its file; info: the thread
    return names_shown([(["dump"], 3), (["info"], 1)])


def check_names_escaped_top():
    """top's plain table: thread, function and file names with terminal escapes print escaped"""
    # the function and its file in the table, the thread and its top in
    # the pane
    return names_shown([(["top", "--once", "--delay", "1"], 3)])


DEEP_TARGET = r"""
import sys, threading, time
sys.setrecursionlimit(200000)
threading.stack_size(512 * 1024 * 1024)
def deep(n):
    if n == 0:
        print("ready")
        sys.stdout.flush()
        while True:
            pass
    return deep(n - 1)
t = threading.Thread(target=deep, args=(100000,), name="deep")
t.daemon = True
t.start()
time.sleep(60)
"""


def check_deep_stack_marked():
    """a 100,000-deep recursion recorded to folded: a [truncated: ...] root, the innermost frames kept"""
    interps = names_interps()
    if not interps:
        return skip("no local interpreter")
    for interp in interps:
        p = spawn(interp, DEEP_TARGET)
        out = os.path.join(TMP, "deep.folded")
        try:
            r = pystitch(["record", "-p", str(p.pid), "-d", "1", "-f",
                          "folded", "-o", out], timeout=20)
            d = pystitch(["dump", "--json", "-p", str(p.pid)], timeout=20)
        finally:
            stop(p)
        if r.returncode != 0:
            return "%s: exit %s: %s" % (interp.label, r.returncode,
                                        r.stderr[-300:])
        with open(out) as f:
            lines = [ln.rsplit(" ", 1)[0].split(";") for ln in f]
        deep = [ln for ln in lines if any(x.startswith("deep (") for x in ln)]
        if not deep:
            return "%s: no stack of deep(): %r" % (interp.label, lines[:3])
        for st in deep:
            if not st[0].startswith("[truncated: "):
                return "%s: a deep stack's root is %r" % (interp.label, st[0])
            if not re.match(r"deep \(.*:(9|10)\)$", st[-1]):
                return "%s: innermost frame %r, not deep()'s loop" % (
                    interp.label, st[-1])
        if b'"name": "[truncated: ' not in d.stdout:
            return "%s: no marker in dump --json" % interp.label
    return ""


# One function of 300,000 lines: its line table is 1.5 MB on 3.11+.
BIG_TARGET = r"""
import sys
src = ("def big():\n    x = 0\n" + "    x += 1\n" * 300000 +
       "    while True:\n        x += 1\n")
ns = {}
exec(compile(src, "generated_big.py", "exec"), ns)
print("ready")
sys.stdout.flush()
ns["big"]()
"""


def check_huge_line_table():
    """a function with a 300,000-line line table: its stacks are read (3.11+ and an older version)"""
    found = [i for i in (local_interp(), interp_version("3.12"),
                         interp_version("3.10"), interp_version("2.7")) if i]
    new = [i for i in found if not re.match(r"pyenv-(2\.|3\.([0-9]|10)\.)",
                                             i.label)][:1]
    old = [i for i in found if i not in new][:1]
    if not new:
        return skip("no 3.11+ interpreter")
    for interp in new + old:
        p = spawn(interp, BIG_TARGET)
        try:
            r = pystitch(["dump", "-p", str(p.pid)], timeout=20)
        finally:
            stop(p)
        m = re.search(rb"\n    big \(generated_big\.py:(\d+)\)\n", r.stdout)
        if r.returncode != 0 or not m:
            return "%s: no frame of big(): exit %s %r %r" % (
                interp.label, r.returncode, r.stdout[-400:], r.stderr[-300:])
        if interp in new and (m.group(1) != b"1" or
                              b"line table too big" not in r.stderr):
            return "%s: line %s, note %r" % (interp.label, m.group(1),
                                             r.stderr[-300:])
    return ""


TASKS_TARGET = r"""
import asyncio
async def sleeper():
    await asyncio.sleep(3600)
async def main():
    tasks = [asyncio.ensure_future(sleeper()) for _ in range(30000)]
    await asyncio.sleep(0)
    print("ready")
    await asyncio.sleep(3600)
asyncio.run(main())
"""


def check_many_tasks_named():
    """dump --async with 30,000 asyncio tasks says that only 10,000 are read"""
    interp = local_interp()
    if not interp or re.match(r"pyenv-(2\.|3\.[0-7]\.)", interp.label):
        return skip("no local 3.8+ interpreter")
    p = spawn(interp, TASKS_TARGET)
    try:
        r = pystitch(["dump", "--async", "-p", str(p.pid)], timeout=20)
    finally:
        stop(p)
    if r.returncode != 0:
        return "exit %s: %r" % (r.returncode, r.stderr[-300:])
    if b"more asyncio tasks than are read (10000 at most)" not in r.stderr:
        return "no word of the cap: %r" % r.stderr[-300:]
    if r.stdout.count(b"\nTask ") != 10000:
        return "%d tasks shown" % r.stdout.count(b"\nTask ")
    return ""


def main():
    checks = [(n, f) for n, f in list(globals().items())
              if n.startswith("check_") and callable(f)]
    checks.sort(key=lambda nf: nf[1].__code__.co_firstlineno)
    for name, fn in checks:
        start = time.time()
        err = attempt(fn)
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
