# test_dump.py: `pystitch dump` and `info` against real multi-threaded targets
# on every CPython found: every OS thread mapped to exactly its own function,
# line and name. Prints TAP lines and "N passed, M failed, K skipped".
import json
import re
import shutil
import os
import subprocess
import sys
import time
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytargets  # noqa: E402
import tap  # noqa: E402
from tap import attempt, pystitch  # noqa: E402

TAP = tap.Tap()
report = TAP.report
TMP = tap.tmpdir("dump")


def check(name, fn, *args):
    """Reports the check fn(*args) under name; None passes."""
    TAP.check(name, fn, *args, skip=None)


def check_dump(interp):
    t = pytargets.Target(interp, "threads.py")
    try:
        expected = {}  # ns tid -> (key, name)
        version = None
        native = 0
        while True:
            line = t.readline().strip()
            if line == "ready":
                break
            if line.startswith("version "):
                version = line.split()[1]
                continue
            if line.startswith("native-threads "):
                native = int(line.split()[1])
                continue
            _, tid, key, name = line.split(" ", 3)
            expected[int(tid)] = (key, name)
        time.sleep(0.3)
        marks = pytargets.markers(os.path.join(t.src_dir, "threads.py"))
        marks.update(pytargets.markers(
            os.path.join(t.src_dir, "threads_unicode.py")))
        nsmap = t.ns_tid_map()
        r = pystitch(["dump", "--json", "-p", str(t.pid)])
        if r.returncode != 0:
            return "dump exited %d: %s" % (r.returncode,
                                           r.stderr.decode(errors="replace"))
        dump = json.loads(r.stdout.decode("utf-8"))
        errors = []
        if dump["version"] != version:
            errors.append("version %s, the interpreter says %s" % (
                dump["version"], version))
        by_tid = dict((th["tid"], th) for th in dump["threads"])
        if sorted(by_tid) != sorted(nsmap):
            errors.append("dump tids %s != /proc tids %s" % (
                sorted(by_tid), sorted(nsmap)))
        two = dump["version"].startswith("2.")
        for host_tid, ns_tid in nsmap.items():
            if ns_tid not in expected or host_tid not in by_tid:
                continue
            key, name = expected[ns_tid]
            th = by_tid[host_tid]
            line, func = marks[key]
            frames = th["frames"]
            # 3.15 keeps the thread state in a C11 thread-local, not
            # under a pthread key.
            ver = tuple(int(x) for x in dump["version"].split(".")[:2])
            want_method = ("list" if two else
                           "tls" if ver >= (3, 15) else "tsd")
            if not th["python"] or not frames:
                errors.append("tid %d (%s): no Python stack (error %s)" % (
                    host_tid, key, th["error"]))
                continue
            top = frames[0]
            if top["name"].split(".")[-1] != func or top["line"] != line:
                errors.append("tid %d (%s): top frame %s line %d, want %s "
                              "line %d" % (host_tid, key, top["name"],
                                           top["line"], func, line))
            if os.path.basename(top["file"]) not in ("threads.py",
                                                     "threads_unicode.py"):
                errors.append("tid %d: file %s" % (host_tid, top["file"]))
            if th["name"] != name:
                errors.append("tid %d (%s): name %r, want %r" % (
                    host_tid, key, th["name"], name))
            if th["method"] != want_method:
                errors.append("tid %d (%s): mapped by %s, want %s" % (
                    host_tid, key, th["method"], want_method))
            if key == "deep":
                n = sum(1 for f in frames if f["name"].endswith("recurse"))
                if n != 40:
                    errors.append("deep: %d recurse frames, want 40" % n)
        others = [by_tid[h] for h, n in nsmap.items()
                  if n not in expected and h in by_tid]
        if len(others) != native or any(th["python"] for th in others):
            errors.append("want %d native-only thread(s) without Python "
                          "state, got %s" % (native, [
                              (th["tid"], th["python"]) for th in others]))
        holders = [th["name"] for th in dump["threads"] if th["gil"]]
        if len(holders) > 1 or not set(holders) <= {"busy", "busy2"}:
            errors.append("GIL holders %s: want at most one of the two "
                          "spinning threads" % holders)
        missing = set(expected) - set(nsmap.values())
        if missing:
            errors.append("threads not seen: %s" % sorted(missing))
        stopped = [k for k, v in t.states().items() if v in "tT"]
        if stopped:
            errors.append("threads left stopped: %s" % stopped)
        r = pystitch(["info", "-p", str(t.pid)])
        if r.returncode != 0 or b"version:" not in r.stdout:
            errors.append("info exited %d: %s" % (r.returncode, r.stderr))
        # Its thread table's columns line up on a terminal (one name has
        # an accent, and two East Asian wide characters: 2 columns each),
        # whatever the names' lengths.
        lines = r.stdout.decode("utf-8", errors="replace").splitlines()
        head = [i for i, x in enumerate(lines) if x.startswith("  tid ")]
        col = lines[head[0]].find(" fsbase") + 1 if head else 0
        rows = [on_screen(x) for x in lines[head[0] + 1:]] if head else []
        bad = [x for x in rows if x[col:col + 2] != "0x" or x[col - 1] != " "]
        if not col or len(rows) < len(expected) or bad:
            errors.append("info's thread table not aligned (fsbase at %d): "
                          "%s" % (col, "\n".join(lines[head[0]:] if head
                                                 else lines)))
        return "\n".join(errors)
    finally:
        t.stop()


def on_screen(line):
    """line as a terminal lays it out: a wide character (East Asian W, F)
    followed by a filler, so that indexes are columns."""
    return "".join(c + ("\0" if unicodedata.east_asian_width(c) in "WF"
                        else "") for c in line)


def check_many(interp):
    """16 threads 30 frames deep, 4 of them spinning: three dumps in a row
    (the second and third hit the code-object cache) must each give every
    worker exactly leaf <- 28 x descend, with its name."""
    t = pytargets.Target(interp, "many.py", ["16", "30", "4"])
    try:
        while t.readline().strip() != "ready":
            pass
        errors = []
        holders = []
        for attempt in range(3):
            r = pystitch(["dump", "--json", "-p", str(t.pid)])
            if r.returncode != 0:
                return "dump exited %d: %s" % (r.returncode, r.stderr)
            dump = json.loads(r.stdout.decode("utf-8"))
            workers = [th for th in dump["threads"]
                       if th["name"].startswith("worker-")]
            holders += [th["name"] for th in dump["threads"] if th["gil"]]
            if len(workers) != 16:
                errors.append("dump %d: %d named workers, want 16" % (
                    attempt, len(workers)))
            for th in workers:
                names = [f["name"].split(".")[-1] for f in th["frames"]]
                if names[:29] != ["leaf"] + ["descend"] * 28:
                    errors.append("dump %d: %s: %s" % (
                        attempt, th["name"], " <- ".join(names[:31])))
        # A free-threaded build has no GIL: no thread may be said to hold
        # it, or not to hold it (null), and the dump says why.
        want_ft = "freethreaded" in interp.label
        if bool(dump.get("free_threaded")) != want_ft:
            errors.append("free_threaded: %s, want %s" % (
                dump.get("free_threaded"), want_ft))
        if want_ft:
            said = [th["gil"] for th in dump["threads"]
                    if th["gil"] is not None]
            if holders or said:
                errors.append("free-threaded: GIL holders %s, GIL states "
                              "%s: want none" % (holders, said))
            return "\n".join(errors[:10])
        # Workers 0-3 spin; one of them holds the GIL nearly all the time,
        # but 2.7's GIL can be between owners at a given instant: look a
        # few more times before calling it missing.
        for attempt in range(10):
            if holders:
                break
            r = pystitch(["dump", "--json", "-p", str(t.pid)])
            if r.returncode == 0:
                holders += [th["name"] for th in json.loads(
                    r.stdout.decode("utf-8"))["threads"] if th["gil"]]
        busy = {"worker-0", "worker-1", "worker-2", "worker-3"}
        if not holders or not set(holders) <= busy:
            errors.append("GIL holders over 3 dumps: %s, want spinning "
                          "workers only (and at least one)" % holders)
        return "\n".join(errors[:10])
    finally:
        t.stop()


def dumps(pid, n, extra=()):
    """n dumps of pid: [(parsed json, stderr)]; an exit status other than 0
    raises."""
    out = []
    for _ in range(n):
        r = pystitch(["dump", "--json", "-v", "-v", "-p", str(pid)] +
                     list(extra))
        if r.returncode != 0:
            raise RuntimeError("dump exited %d: %s" % (
                r.returncode, r.stderr.decode(errors="replace")[-300:]))
        out.append((json.loads(r.stdout.decode("utf-8")),
                    r.stderr.decode(errors="replace")))
    return out


STORM_BOTTOM = ["spin", "run", "_bootstrap_inner", "_bootstrap"]


def check_exact(interp):
    """Six threads whose stacks change all the time (storm.py): 20 dumps
    must each give every storm thread its name and a whole, valid stack
    (rec* <- spin <- threading), never a torn one; the same with
    --nonblocking may report torn stacks but never a wrong one. No thread
    is left stopped."""
    t = pytargets.Target(interp, "storm.py")
    try:
        while t.readline().strip() != "ready":
            pass
        time.sleep(0.2)
        errors, notes = [], []
        for mode, extra in (("exact", ()), ("nonblocking",
                                             ("--nonblocking",))):
            torn = rereads = seen = 0
            for dump, err in dumps(t.pid, 20, extra):
                rereads += err.count("read again stopped")
                storm = [th for th in dump["threads"]
                         if th["name"].startswith("storm-")]
                unnamed = [th["tid"] for th in dump["threads"]
                           if th["python"] and not th["name_from_python"]]
                # Names come from threading's registry, not the stack
                # read: a torn (--nonblocking) stack keeps its name.
                if len(storm) != 6 or unnamed:
                    errors.append("%s: %d storm threads named, unnamed "
                                  "Python threads %s" % (mode, len(storm),
                                                         unnamed))
                for th in dump["threads"]:
                    if not th["python"]:
                        continue
                    seen += 1
                    if th["error"]:
                        torn += 1
                        if mode == "exact":
                            errors.append("exact: tid %d (%s): %s" % (
                                th["tid"], th["name"], th["error"]))
                        continue
                    names = [f["name"].split(".")[-1] for f in th["frames"]]
                    if th["name"].startswith("storm-"):
                        k = 0
                        while k < len(names) and names[k] == "rec":
                            k += 1
                        # 2.7's threading: __bootstrap_inner, __bootstrap
                        if [n.lstrip("_") for n in names[k:]] != \
                                [n.lstrip("_") for n in STORM_BOTTOM]:
                            errors.append("%s: %s: impossible stack %s" % (
                                mode, th["name"], " <- ".join(names)))
            notes.append("%s: %d of %d thread stacks torn, %d read again "
                         "stopped" % (mode, torn, seen, rereads))
        stopped = [k for k, v in t.states().items() if v in "tT"]
        if stopped:
            errors.append("threads left stopped: %s" % stopped)
        print("# %s: %s" % (interp.label, "; ".join(notes)))
        return "\n".join(errors[:10])
    finally:
        t.stop()


def check_bad_names(interp):
    """Thread names that are not UTF-8 (a native thread's comm set from raw
    bytes, a threading name with lone surrogates): `dump --json` must still
    be valid JSON, strictly UTF-8, with U+FFFD for each ill-formed byte."""
    t = pytargets.Target(interp, "badname.py")
    try:
        while t.readline().strip() != "ready":
            pass
        bad = []
        for tid in os.listdir("/proc/%d/task" % t.pid):
            with open("/proc/%d/task/%s/comm" % (t.pid, tid), "rb") as f:
                if f.read().rstrip(b"\n") == b"\xff\xfebad":
                    bad.append(int(tid))
        if len(bad) != 1:
            return "want one thread with comm \\xff\\xfebad, got %s" % bad
        r = pystitch(["dump", "--json", "-p", str(t.pid)])
        if r.returncode != 0:
            return "dump exited %d: %s" % (r.returncode,
                                           r.stderr.decode(errors="replace"))
        try:
            dump = json.loads(r.stdout.decode("utf-8"))
        except ValueError as e:
            return "dump --json is not valid UTF-8 JSON: %s: %r" % (
                e, r.stdout[:300])
        names = dict((th["tid"], th["name"]) for th in dump["threads"])
        errors = []
        if names.get(bad[0]) != u"\ufffd\ufffdbad":
            errors.append("native thread %d named %r, want %r" % (
                bad[0], names.get(bad[0]), u"\ufffd\ufffdbad"))
        py = [n for n in names.values() if n.startswith("py")]
        if not dump["version"].startswith("2.") and len(py) != 1:
            errors.append("want one thread named py..., got %r" % names)
        return "\n".join(errors)
    finally:
        t.stop()


def dump_async(pid, *extra):
    """dump --async --json of pid: (the parsed dump, stderr), or (None, why
    not) when it exits non-zero."""
    r = pystitch(["dump", "--async", "--json", "-p", str(pid)] +
                 list(extra))
    err = r.stderr.decode(errors="replace")
    if r.returncode != 0:
        return None, "dump --async %s exited %d: %s" % (
            " ".join(extra), r.returncode, err)
    return json.loads(r.stdout.decode("utf-8")), err


def check_async(interp, uvloop=False):
    """tests/targets/tasks.py: 20 waiting tasks (gathers, a TaskGroup, a
    chain of tasks awaiting tasks, asyncio.sleep, a socket read). dump
    --async must show every task the target itself lists, with its name,
    its own coroutine's function and line as get_stack() gives them, the
    tasks awaiting it as _asyncio_awaited_by gives them (before 3.14, as
    the target's rules() rebuild it: on 3.14+ they must agree), and its
    thread. With uvloop (its loop does not say its thread): before 3.14
    no thread and one note naming the loop's type, 3.14+ the thread; None
    when the interpreter has no uvloop."""
    t = pytargets.Target(interp, "tasks.py", ["uvloop"] if uvloop else [])
    try:
        snap = pytargets.tasks_seen(t)
        if snap is None:
            return None
        dump, err = dump_async(t.pid)
        if dump is None:
            return err
        main = [th for th in dump["threads"] if th["name"] == "MainThread"]
        if not main or not main[0]["frames"]:
            return "no main thread stack: %s" % dump["threads"]
        errors = ["%s: awaited by %s, rebuilt by rules() as %s" % (
            tk["name"], tk["awaited_by"], tk["awaited_by_rules"])
            for tk in snap if tk["awaited_by"] != tk["awaited_by_rules"]]
        got = {tk["name"]: tk for tk in dump["tasks"]}
        want = {tk["name"]: tk for tk in snap}
        if sorted(got) != sorted(want):
            errors.append("tasks %s, want %s" % (sorted(got), sorted(want)))
        for name, w in want.items():
            g = got.get(name)
            if not g:
                continue
            if not g["frames"]:
                errors.append("%s: no coroutine frames" % name)
                continue
            outer = g["frames"][-1]
            fn, line = w["frames"][0]
            if (outer["name"].split(".")[-1], outer["line"]) != (fn, line):
                errors.append("%s: outermost coroutine %s:%d, want %s:%d" % (
                    name, outer["name"], outer["line"], fn, line))
            if sorted(g["awaited_by"]) != (w["awaited_by"] or []):
                errors.append("%s: awaited by %s, want %s" % (
                    name, sorted(g["awaited_by"]), w["awaited_by"]))
            if w["awaits"] and name not in got.get(
                    w["awaits"], {}).get("awaited_by", []):
                errors.append("%s awaits %s: not among its waiters" % (
                    name, w["awaits"]))
            tid = main[0]["tid"]
            if uvloop and tuple(map(int, dump["version"].split(".")[:2])) \
                    < (3, 14):
                tid = 0
                if g.get("no_thread") != "loop's thread not known" or \
                        g.get("loop_type") != "Loop":
                    errors.append("%s: no_thread %r, loop_type %r" % (
                        name, g.get("no_thread"), g.get("loop_type")))
            if g["tid"] != tid or g["running"]:
                errors.append("%s: thread %d, running %s: want %d, waiting"
                              % (name, g["tid"], g["running"], tid))
        if uvloop and any(g["tid"] == 0 for g in got.values()) and \
                err.count("event loop of type Loop") != 1:
            errors.append("want one note naming the loop: %r" % err)
        inner = {n: got[n]["frames"][0]["name"].split(".")[-1]
                 for n in ("sleeper", "sock-reader") if n in got}
        # main() yields a future from parked(), a generator whose frame
        # also holds a generator: the chain ends at parked.
        mains = [n for n, w in want.items() if w["frames"][0][0] == "main"]
        for n in mains:
            names = [f["name"].split(".")[-1] for f in got.get(n, {}).get(
                "frames", [])]
            if names != ["parked", "main"]:
                errors.append("%s: chain %s, want parked, main" % (n, names))
        # uvloop's sock_recv is a C method: its future is awaited by
        # sock_reader itself.
        recv = "sock_reader" if uvloop else "sock_recv"
        if inner != {"sleeper": "sleep", "sock-reader": recv}:
            errors.append("innermost coroutines %s, want sleep and %s"
                          % (inner, recv))
        # The text form: a leaf of the nested gathers under the tasks
        # awaiting it, outwards.
        r = pystitch(["dump", "--async", "-p", str(t.pid)])
        text = r.stdout.decode("utf-8", "replace")
        leaf = [n for n, w in want.items() if w["frames"][0][0] == "leaf"]
        if "asyncio tasks: 20" not in text or not leaf:
            errors.append("text: no task list: %s" % text[-500:])
        else:
            block = text.split('Task "%s"' % leaf[0], 1)[-1].split(
                "\n\n")[0]
            order = [ln.strip().split(" ")[0] for ln in block.splitlines()[1:]]
            order = [x for x in order if x in ("leaf", "inner_gather",
                                               "outer_gather", "task")]
            if order != ["leaf", "task", "inner_gather", "task",
                         "outer_gather", "task"]:
                errors.append("text block of %s: %s" % (leaf[0], block))
        return "\n".join(errors[:10])
    finally:
        t.stop()


def check_async_storm(interp):
    """tests/targets/taskstorm.py (50 tasks switching chains without end):
    dump --async, 3 times: every task with its chain (the ones that moved
    while read are read again with the loop stopped), each a prefix of a
    possible chain; --nonblocking: the moved ones marked torn, without
    frames, the others possible too."""
    ok = [["worker", "a1", "b1", "sleep", "__sleep0"],
          ["worker", "a2", "b2", "sleep", "__sleep0"],
          ["main", "sleep"]]
    t = pytargets.Target(interp, "taskstorm.py", ["50"])
    try:
        while t.readline().strip() != "ready":
            pass
        errors, torn = [], 0
        for mode in ([], [], [], ["--nonblocking"]):
            dump, err = dump_async(t.pid, *mode)
            if dump is None:
                return err
            tasks = dump["tasks"]
            if len(tasks) != 51:
                errors.append("%s: %d tasks, want 51" % (mode, len(tasks)))
            for tk in tasks:
                names = [f["name"].split(".")[-1]
                         for f in reversed(tk["frames"])]
                if tk["torn"]:
                    torn += 1
                    if not mode or names:
                        errors.append("%s: %s torn, frames %s" % (
                            mode, tk["name"], names))
                elif not names or not any(names == c[:len(names)]
                                          for c in ok):
                    errors.append("%s: %s: impossible %s" % (
                        mode, tk["name"], names))
        print("# %s: --nonblocking: %d of 51 tasks torn" % (interp.label,
                                                           torn))
        return "\n".join(errors[:10])
    finally:
        t.stop()


def check_async_before(interp):
    """Before 3.8 dump --async says, in one note, that it reads tasks on
    3.8+ only, and shows the threads."""
    t = pytargets.Target(interp, "threads.py")
    try:
        while t.readline().strip() != "ready":
            pass
        dump, err = dump_async(t.pid)
        if dump is None:
            return err
        if dump["tasks"] or err.count("3.8+ only") != 1 or \
                not dump["threads"]:
            return "want threads, no tasks and one note: %d tasks, %d " \
                "threads, stderr %r" % (len(dump["tasks"]),
                                        len(dump["threads"]), err)
        return ""
    finally:
        t.stop()


def check_tree(interp):
    """dump -s of a shell running a multiprocessing parent with 2 children:
    the shell listed as not Python (no error), the two children's
    identical stacks shown once with both named by role, the parent
    apart; --json keeps every process whole with its role; exit 0.
    --merge of the two children's own --json dumps (their hosts renamed,
    as two nodes would write them) groups them again, named by host; a
    file that is not a dump is named and the others merged (exit 1)."""
    script = os.path.join(pytargets.TARGETS, "mp.py")
    sh = subprocess.Popen(["bash", "-c", "%s -u %s 60 park; true" % (
        interp.exe, script)],
                          stdout=subprocess.PIPE)
    try:
        if b"ready" not in sh.stdout.readline():
            return "mp.py did not start"
        r = pystitch(["dump", "-s", "-p", str(sh.pid)])
        out = r.stdout.decode("utf-8", errors="replace")
        err = r.stderr.decode(errors="replace")
        if r.returncode != 0 or err.strip():
            return "exit %d, stderr: %s" % (r.returncode, err)
        problems = []
        if not re.search(r"\n  %d: not read \(not Python\)" % sh.pid, out):
            problems.append("the shell not listed as not Python")
        m = re.search(r"Stack \d+ of \d+, pid \d+ \((Process-\d)\), \d+ "
                      r"\((Process-\d)\): 2 threads \(MainThread\)\n"
                      r"    child_work ", out)
        if not m or set(m.groups()) != {"Process-1", "Process-2"}:
            problems.append("the children's stack not grouped")
        if not re.search(r"pid \d+: 1 thread \(MainThread\)\n(    .*\n)*"
                         r"    parent_wait ", out):
            problems.append("the parent's stack not apart")
        r = pystitch(["dump", "-s", "-p", str(sh.pid), "--json"])
        d = json.loads(r.stdout.decode("utf-8"))
        roles = sorted(p["role"] for p in d["processes"])
        bad = [x for x in d["not_read"] if x["pid"] == sh.pid and
               x["error"] == "PST_ENOTPY"]
        if roles != ["", "Process-1", "Process-2"] or not bad or \
                any(not p["threads"] for p in d["processes"]):
            problems.append("--json: roles %s, not read %s" % (
                roles, d["not_read"]))
        # --merge of two one-process dumps (as two hosts would write
        # them): the children's stacks grouped again, named by host
        kids = [p["pid"] for p in d["processes"] if p["role"]]
        files = []
        for i, k in enumerate(kids):
            r = pystitch(["dump", "--json", "-p", str(k)])
            f = os.path.join(TMP, "merge-%d.json" % i)
            with open(f, "wb") as w:
                w.write(r.stdout.replace(b'"host": "', b'"host": "node%d-' % i))
            files.append(f)
        r = pystitch(["dump", "--merge"] + files)
        out = r.stdout.decode("utf-8", errors="replace")
        if r.returncode != 0 or not re.search(
                r"pid \d+@node0-[^ ]* \(Process-\d\), \d+@node1-[^ ]* "
                r"\(Process-\d\): 2 threads \(MainThread\)\n    child_work ",
                out):
            problems.append("--merge: exit %d\n%s" % (r.returncode, out))
        bad = os.path.join(TMP, "bad.json")
        with open(bad, "w") as w:
            w.write("{not json")
        r = pystitch(["dump", "--merge", bad, files[0]])
        if r.returncode != 1 or b"bad.json: line 1" not in r.stderr or \
                b"child_work" not in r.stdout:
            problems.append("--merge with a bad file: exit %d, %s" % (
                r.returncode, r.stderr))
        if problems:
            return "\n".join(problems) + "\n" + out
        return ""
    finally:
        for c in pytargets.children(sh.pid):
            for g in pytargets.children(c) + [c]:
                try:
                    os.kill(g, 9)
                except OSError:
                    pass
        sh.kill()
        sh.wait()


def check_several_bad(interp):
    """dump -p of a Python process, a pid that is gone and a process that
    is not Python: the Python one dumped, each other named in one line
    saying why, exit 0; --all --match finds the Python one alone."""
    t = pytargets.Target(interp, "sleeper.py")
    other = subprocess.Popen(["sleep", "60"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    try:
        t.readline()
        r = pystitch(["dump", "-p", "%d,%d,%d" % (t.pid, gone.pid, other.pid)])
        out = r.stdout.decode("utf-8", errors="replace")
        err = r.stderr.decode(errors="replace").strip().splitlines()
        problems = []
        if r.returncode != 0 or "\n  %d: Python" % t.pid not in out:
            problems.append("exit %d, the Python one not dumped" %
                            r.returncode)
        if len(err) != 2 or not any(str(gone.pid) in e for e in err) or \
                not any(str(other.pid) in e and "not a Python" in e
                        for e in err):
            problems.append("stderr: %s" % err)
        r = pystitch(["dump", "--all", "--match", "sleeper[.]py", "--json"])
        d = json.loads(r.stdout.decode("utf-8")) if r.returncode == 0 else {}
        pids = [p["pid"] for p in d.get("processes", [])]
        if t.pid not in pids:
            problems.append("--all --match: exit %d, pids %s" % (
                r.returncode, pids))
        return "\n".join(problems)
    finally:
        other.kill()
        other.wait()
        t.stop()


def check_locals(interp):
    """dump --locals --json: the parked frame's locals as the target says
    they should read (ints, a negative one, one over 64 bits, a float, a
    non-ASCII str, bytes with a NUL, True, None, containers by length),
    and a 31-frame recursion's counter in every frame, innermost first;
    the text output names them too."""
    t = pytargets.Target(interp, "locals.py")
    try:
        want = json.loads(t.readline())
        t.readline()
        time.sleep(0.2)
        r = pystitch(["dump", "--locals", "--json", "-p", str(t.pid)])
        if r.returncode != 0:
            return "exit %d: %s" % (r.returncode, r.stderr)
        d = json.loads(r.stdout.decode("utf-8"))
        by = dict((th["name"], th) for th in d["threads"])
        problems = []
        frames = by.get("values", {}).get("frames", [])
        got = dict((v["name"], v["value"]) for v in
                   (frames[0].get("locals", []) if frames else []))
        for k, v in sorted(want.items()):
            if got.get(k) != v:
                problems.append("values: %s = %r, want %r" % (k, got.get(k),
                                                              v))
        depths = [dict((v["name"], v["value"]) for v in f.get("locals", []))
                  .get("depth") for f in by.get("deep", {}).get("frames", [])
                  if f["name"].split(".")[-1] == "deep"]
        if depths != [str(i) for i in range(31)]:
            problems.append("deep: depth %s" % depths)
        r = pystitch(["dump", "--locals", "-p", str(t.pid)])
        if r.returncode != 0 or "        neg = -7\n" not in \
                r.stdout.decode("utf-8", errors="replace"):
            problems.append("text: exit %d, no 'neg = -7' line" %
                            r.returncode)
        return "\n".join(problems)
    finally:
        t.stop()


def check_subinterp(interp):
    """A sub-interpreter (subinterp.py): the main thread's frames there
    (sub_sleep, <module> of <string>) on top of the call that entered it
    (outer_call, <module>), in dump and in record's folded stacks; the main
    interpreter's thread "w" in main_worker and the sub-interpreter's own
    thread "sub-worker" in sub_worker."""
    t = pytargets.Target(interp, "subinterp.py")
    try:
        line = t.readline().strip()
        if line not in ("ready", "ready no-thread"):
            return "target: %r" % line
        time.sleep(0.3)
        r = pystitch(["dump", "--json", "-p", str(t.pid)])
        if r.returncode != 0:
            return "dump: exit %d: %s" % (r.returncode, r.stderr)
        d = json.loads(r.stdout.decode("utf-8"))
        by = dict((th["name"], [f["name"].split(".")[-1]
                                for f in th["frames"]])
                  for th in d["threads"])
        problems = []
        main = by.get("MainThread", [])
        if main[:4] != ["sub_sleep", "<module>", "outer_call", "<module>"]:
            problems.append("MainThread: %s" % main)
        if "main_worker" not in by.get("w", []):
            problems.append("w: %s" % by.get("w"))
        if line == "ready" and "sub_worker" not in by.get("sub-worker", []):
            problems.append("sub-worker: %s (threads %s)" % (
                by.get("sub-worker"), sorted(by)))
        out = os.path.join(TMP, "subinterp-%d.folded" % t.pid)
        r = pystitch(["record", "--idle", "-r", "200", "-d", "1", "-f",
                      "folded", "-o", out, "-p", str(t.pid)])
        if r.returncode != 0:
            problems.append("record: exit %d: %s" % (r.returncode, r.stderr))
        else:
            with open(out, encoding="utf-8", errors="replace") as f:
                stacks = [ln.rsplit(" ", 1)[0] for ln in f]
            if not any(re.search(r"outer_call[^;]*;[^;]*<module>[^;]*;"
                                 r"[^;]*sub_sleep", s) for s in stacks):
                problems.append("record: no stack outer_call;<module>;"
                                "sub_sleep in %s" % stacks[:6])
            if line == "ready" and not any("sub_worker" in s for s in stacks):
                problems.append("record: no sub_worker stack")
        return "\n".join(problems)
    finally:
        t.stop()


def check_merge_labels():
    """--merge of two hosts' saved dumps of an 8-rank job whose rank 3 hangs
    elsewhere, with rank 0's two DataLoader workers (which inherit its
    RANK): the ranks of the common stack as ranges with a gap ("ranks
    0-2,4-7"), rank 3's stack first (the odd one out), and the workers by
    pid, rank and role, not as repeated ranks."""
    def proc(pid, rank, stack, role=""):
        frames = [{"name": n, "file": "train.py", "line": i + 10,
                   "kind": "python"} for i, n in enumerate(stack)]
        return {"pid": pid, "rank": rank, "local_rank": rank % 4,
                "world_size": 8, "role": role, "version": "3.11.2",
                "cmdline": "python3 train.py", "threads": [
                    {"tid": pid, "name": "MainThread", "python": True,
                     "idle": True, "frames": frames}]}
    common = ["allreduce", "backward", "train_step", "main"]
    hosts = [[proc(100 + r, r, ["sleep", "late", "main"] if r == 3
                   else common) for r in range(4)],
             [proc(200 + r, r, common) for r in range(4, 8)]]
    hosts[0] += [proc(110 + k, 0, ["_worker_loop", "_bootstrap"],
                      "DataLoader worker (Process-%d)" % (k + 1))
                 for k in range(2)]
    paths = []
    for i, procs in enumerate(hosts):
        paths.append(os.path.join(TMP, "node%d.json" % i))
        with open(paths[-1], "w") as f:
            json.dump({"host": "node%d" % i, "processes": procs}, f)
    r = pystitch(["dump", "--merge"] + paths)
    out = r.stdout.decode("utf-8", errors="replace")
    heads = [line for line in out.splitlines() if line.startswith("Stack ")]
    want = ["Stack 1 of 3, rank 3: 1 thread (MainThread)",
            "Stack 2 of 3, pid 110@node0 (rank 0, DataLoader worker "
            "(Process-1)), 111@node0 (rank 0, DataLoader worker "
            "(Process-2)): 2 threads (MainThread)",
            "Stack 3 of 3, ranks 0-2,4-7: 7 threads (MainThread)"]
    if r.returncode != 0 or heads != want:
        return "exit %d, groups:\n%s\nwanted:\n%s" % (
            r.returncode, "\n".join(heads), "\n".join(want))
    return ""


def main():
    found, skipped = pytargets.interpreters()
    check("dump --merge: ranks with a gap, workers sharing a rank",
          check_merge_labels)
    uvloops = 0
    for label, why in skipped:
        report(None, "dump " + label, why)
    for interp in found:
        check("dump " + interp.label, check_dump, interp)
        check("dump 16 deep threads, 3 times: " + interp.label, check_many,
              interp)
        check("dump exact on changing stacks: " + interp.label, check_exact,
              interp)
        check("dump --json of non-UTF-8 names: " + interp.label,
              check_bad_names, interp)
        check("dump --locals: " + interp.label, check_locals, interp)
        if not re.search(r"2\.7|3\.[67]\b", interp.label):
            check("dump and record of a sub-interpreter: " + interp.label,
                  check_subinterp, interp)
        if re.search(r"3\.7\b", interp.label):
            check("dump --async before 3.8: " + interp.label,
                  check_async_before, interp)
        if "2.7" in interp.label or re.search(r"3\.(6|7)\b", interp.label):
            continue  # tasks.py names its tasks (3.8+)
        check("dump --async, 20 tasks: " + interp.label, check_async, interp)
        if re.search(r"pyenv-3\.(9|1[12])\b|sid-container-3\.14$",
                     interp.label):
            check("dump --async of a task storm: " + interp.label,
                  check_async_storm, interp)
        if interp.rootfs:
            continue
        err = attempt(check_async, interp, uvloop=True)
        if err is not None:
            uvloops += 1
            report(not err, "dump --async, 20 tasks on uvloop: " +
                   interp.label, err)
    for interp in found:
        # (roles: multiprocessing's BaseProcess, 3.x)
        if interp.label.startswith(("pyenv-3.12", "debian-static",
                                    "pyenv-3.8")):
            check("dump -s of a shell's multiprocessing tree: " +
                  interp.label, check_tree, interp)
            check("dump -p with a gone and a non-Python pid: " +
                  interp.label, check_several_bad, interp)
    if found and not uvloops:
        report(None, "dump --async on uvloop", "no interpreter here imports "
               "uvloop (tools/install-deps.sh installs python3-uvloop)")
    if not found:
        report(False, "at least one interpreter", "no CPython found")
    shutil.rmtree(TMP, ignore_errors=True)
    return TAP.finish()


if __name__ == "__main__":
    sys.exit(main())
