# pytargets.py: finding the CPython interpreters of this machine and starting
# test targets under them (directly, or in a Debian rootfs run as a container
# with unshare + chroot), for the integration tests.
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(os.path.dirname(HERE), "targets")
ROOTFS_DIR = os.environ.get("PST_ROOTFS_DIR", "/var/cache/pystitch")


class Interp(object):
    def __init__(self, label, exe, rootfs=None):
        self.label, self.exe, self.rootfs = label, exe, rootfs

    def __repr__(self):
        return self.label


def interpreters():
    """Returns (found, skipped): Interp list and (label, reason) list."""
    found, skipped = [], []
    for d in sorted(glob.glob("/root/.pyenv/versions/*")):
        m = re.match(r"(\d+)\.(\d+)\.", os.path.basename(d) + ".")
        if not m:
            continue
        exe = os.path.join(d, "bin", "python%s.%s" % m.groups())
        if os.access(exe, os.X_OK):
            found.append(Interp("pyenv-" + os.path.basename(d), exe))
    for want in ["2.7", "3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12",
                 "3.13"]:
        if not any(i.label.startswith("pyenv-%s." % want) for i in found):
            skipped.append(("pyenv-" + want, "not installed under "
                            "/root/.pyenv/versions"))
    if os.access("/usr/bin/python3.11", os.X_OK):
        found.append(Interp("debian-static-3.11", "/usr/bin/python3.11"))
    else:
        skipped.append(("debian-static-3.11", "/usr/bin/python3.11 absent"))
    # 3.14d, 3.15d: Debian's debug builds (Py_DEBUG: other struct sizes).
    for dist, ver in [("sid", "3.14"), ("sid", "3.15"), ("sid", "3.14d"),
                      ("sid", "3.15d"), ("trixie", "3.13")]:
        root = os.path.join(ROOTFS_DIR, dist + "-rootfs")
        exe = "/usr/bin/python" + ver
        if os.access(root + exe, os.X_OK):
            found.append(Interp("%s-container-%s" % (dist, ver), exe, root))
        else:
            skipped.append(("%s-container-%s" % (dist, ver),
                            "no rootfs at %s (tests/setup-rootfs.sh makes it)"
                            % root))
    # Free-threaded builds (--disable-gil), built by
    # tests/setup-freethreaded.sh; a .why file says why one is absent.
    for ver in ["3.13", "3.14", "3.15"]:
        d = os.path.join(ROOTFS_DIR, "ft", ver + "t")
        if os.path.exists(os.path.join(d, ".built")):
            found.append(Interp("freethreaded-%st" % ver,
                                os.path.join(d, "python")))
            continue
        why = "not built (tests/setup-freethreaded.sh builds it)"
        try:
            with open(d + ".why") as f:
                why = f.read().strip() or why
        except IOError:
            pass
        skipped.append(("freethreaded-%st" % ver, why))
    # PST_PYTHONS=3.15,2.7 keeps the interpreters whose label has one of
    # these in it (a developer's quick run); the others are skipped.
    only = [x for x in os.environ.get("PST_PYTHONS", "").split(",") if x]
    if only:
        skipped += [(i.label, "not in PST_PYTHONS") for i in found
                    if not any(w in i.label for w in only)]
        found = [i for i in found if any(w in i.label for w in only)]
    return found, skipped


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except IOError:
        return []


class Target(object):
    """A running target script; .pid is its pid as pystitch sees it."""

    def __init__(self, interp, script, args=()):
        self.interp = interp
        if interp.rootfs:
            dst = os.path.join(interp.rootfs, "tmp", "pst-targets")
            if os.path.isdir(dst):
                shutil.rmtree(dst)
            shutil.copytree(TARGETS, dst)
            argv = ["unshare", "--pid", "--mount", "--fork", "chroot",
                    interp.rootfs, interp.exe, "-u",
                    "/tmp/pst-targets/" + script] + list(args)
            self.src_dir = dst
        else:
            argv = [interp.exe, "-u", os.path.join(TARGETS, script)] + \
                list(args)
            self.src_dir = TARGETS
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.buf = b""
        self.pid = self.proc.pid
        if interp.rootfs:
            deadline = time.time() + 10
            while time.time() < deadline:
                kids = children(self.proc.pid)
                if kids:
                    self.pid = kids[0]
                    break
                time.sleep(0.01)

    def readline(self, timeout=60):
        """One line of the target's stdout (unbuffered: select sees it)."""
        import select
        fd = self.proc.stdout.fileno()
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            r, _, _ = select.select([fd], [], [], max(left, 0))
            if not r:
                raise RuntimeError("target printed no line for %ds" % timeout)
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError("target exited (status %s)" %
                                   self.proc.poll())
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8") + "\n"

    def ns_tid_map(self):
        """host tid -> tid inside the target's pid namespace."""
        out = {}
        for t in os.listdir("/proc/%d/task" % self.pid):
            # (its Name: line is the comm, which 3.14+ set from the
            # thread's name, cut at 15 bytes: maybe inside a character)
            with open("/proc/%d/task/%s/status" % (self.pid, t),
                      errors="replace") as f:
                for line in f:
                    if line.startswith("NSpid:"):
                        out[int(t)] = int(line.split()[-1])
        return out

    def states(self):
        res = {}
        for t in os.listdir("/proc/%d/task" % self.pid):
            with open("/proc/%d/task/%s/stat" % (self.pid, t),
                      errors="replace") as f:
                res[int(t)] = f.read().rsplit(")", 1)[1].split()[0]
        return res

    def stop(self):
        try:
            self.proc.kill()
        except OSError:
            pass
        if self.interp.rootfs:
            try:
                os.kill(self.pid, 9)
            except OSError:
                pass
        self.proc.wait()


def tasks_seen(t):
    """What tests/targets/tasks.py (started as t) says of its own tasks,
    read up to its "ready": the list of its "tasks" JSON line (None when
    it says it has no uvloop)."""
    seen = None
    while True:
        line = t.readline().strip()
        if line == "no uvloop":
            return None
        if line.startswith("tasks "):
            seen = json.loads(line[6:])
        if line == "ready":
            return seen


def markers(path):
    """{key: (line, enclosing function)} from '# @park:key' comments."""
    res = {}
    func = None
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            line = raw.decode("utf-8")
            m = re.match(r"def (\w+)\(", line, re.UNICODE)
            if m:
                func = m.group(1)
            m = re.search(r"# @park:([\w-]+)", line)
            if m:
                res[m.group(1)] = (n, func)
    return res


def folded(path):
    """[(frames root first, count)] from a folded file."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            out.append((stack.split(";"), int(count)))
    return out
