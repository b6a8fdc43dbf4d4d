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
