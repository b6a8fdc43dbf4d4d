# test_top.py: `pystitch top` in its plain-text mode (stdout not a
# terminal) against real targets: the functions' shares match what the
# target measures of itself, the thread pane names every thread, --once,
# --lines, --sort, intervals, Ctrl-C, bad input with record's exit codes,
# and the target never left stopped. Prints TAP lines and the summary.
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
from tap import PST, pystitch  # noqa: E402

TAP = tap.Tap()
report = TAP.report

ROW = re.compile(r"^\s*([\d.]+)%\s+([\d.]+)%\s+([\d.]+)s\s+([\d.]+)s\s+(\S+) "
                 r"\((.*?)(?::(\d+))?\)$")
PCT = re.compile(r"^\s*[\d.]+%")
# A thread row; on the screen the selected one starts with ">".
THREAD = re.compile(r"^>?\s*(\d+)\s+(\d+)\s+(\S)\s+(\S+)\s+(.*?)\s{2,}(\S.*)$")


def check(name, fn, *args):
    """Reports the check fn(*args) under name; None passes."""
    TAP.check(name, fn, *args, skip=None)


def parse(text):
    """Tables of top's plain output: [{header, rows, threads}]."""
    tables, cur, part = [], None, None
    for line in text.splitlines():
        if line.startswith("pystitch top: "):
            cur = {"header": line, "rows": [], "threads": [], "procs": ""}
            tables.append(cur)
            part = None
        elif cur is None or not line.strip():
            continue
        elif part is None and line.startswith("pid "):
            cur["procs"] = (cur["procs"] + "\n" + line).lstrip("\n")
        elif line.lstrip().startswith("%Own"):
            part = "rows"
        elif line.lstrip().startswith("PID "):
            part = "threads"
        elif part == "rows":
            m = ROW.match(line)
            if not m:
                raise ValueError("bad row: %r" % line)
            cur["rows"].append({
                "own": float(m.group(1)), "total": float(m.group(2)),
                "own_s": float(m.group(3)), "total_s": float(m.group(4)),
                "name": m.group(5), "file": m.group(6),
                "line": int(m.group(7)) if m.group(7) else 0})
        elif part == "threads":
            m = THREAD.match(line)
            if not m:
                raise ValueError("bad thread row: %r" % line)
            cur["threads"].append({"pid": int(m.group(1)),
                                   "tid": int(m.group(2)),
                                   "state": m.group(3), "name": m.group(5),
                                   "top": m.group(6)})
    return tables


def top(args, timeout=60):
    return pystitch(["top"] + args, timeout)


def not_stopped(t):
    st = t.states()
    bad = {k: v for k, v in st.items() if v in "tT"}
    return "" if not bad else "target left stopped: %s" % bad


def totals(t):
    while True:
        line = t.readline()
        if line.startswith("totals "):
            return [float(x) for x in line.split()[1:]]


def check_shares_twice(interp):
    """check_shares, run again once when it misses. Over 10 runs at rest the
    heavy share is off by -0.2 points on average, 2.5 sd (300 samples: 2.8
    expected): unbiased. On a loaded CI machine one 3-second window in a
    few hundred was off by 12 points (the target's clock and the sampler
    lose scheduler slices apart), as record's proportions check saw."""
    err = check_shares(interp)
    if err:
        err2 = check_shares(interp)
        return err2 and "%s; then %s" % (err, err2)
    return err


def check_shares(interp):
    """heavy/medium/light: top's %Total of each against the target's own
    clock over the same interval."""
    t = pytargets.Target(interp, "proportions.py")
    try:
        if t.readline().strip() != "ready":
            return "target did not start"
        before = totals(t)
        r = top(["--once", "--delay", "3", "-p", str(t.pid)])
        after = totals(t)
        if r.returncode != 0:
            return "exit %d: %s" % (r.returncode, r.stderr.decode())
        tabs = parse(r.stdout.decode())
        if len(tabs) != 1:
            return "%d tables with --once" % len(tabs)
        got = {row["name"]: row["total"] for row in tabs[0]["rows"]}
        spent = [a - b for a, b in zip(after, before)]
        want = [100.0 * s / sum(spent) for s in spent]
        names = ["heavy", "medium", "light"]
        mine = [got.get(n, 0.0) for n in names]
        # The main thread is the only one busy: its functions' shares of
        # all thread-samples sum to about 100.
        print("# %s: top %s, target measured %s" % (
            interp.label, " ".join("%s %.1f%%" % x for x in zip(names, mine)),
            " ".join("%.1f%%" % w for w in want)))
        for n, m, w in zip(names, mine, want):
            if abs(m - w) > 10:
                return "%s: top says %.1f%%, the target measured %.1f%%" % (
                    n, m, w)
        if tabs[0]["rows"][0]["name"] not in ("spin", "heavy"):
            return "top row is %s" % tabs[0]["rows"][0]
        return not_stopped(t)
    finally:
        t.stop()


def body_lines(path, func):
    """First and last line of def func's body in path."""
    with open(path) as f:
        lines = f.read().splitlines()
    start = next(i for i, x in enumerate(lines, 1)
                 if x.startswith("def %s(" % func))
    end = start
    for i in range(start, len(lines)):
        if lines[i] and not lines[i][0].isspace():
            break
        if lines[i].strip():
            end = i + 1
    return start + 1, end


def check_intervals(interp):
    """3 spinning threads: tables every 0.5 s, spin on top, every thread
    named in the pane, a table after Ctrl-C, the target running."""
    t = pytargets.Target(interp, "counter.py", ["3", "10", "0.5"])
    try:
        t.readline()
        p = subprocess.Popen([PST, "top", "--delay", "0.5", "-p", str(t.pid)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(2.3)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        if p.returncode != 0:
            return "exit %d after SIGINT: %s" % (p.returncode, err.decode())
        tabs = parse(out.decode())
        if not 4 <= len(tabs) <= 6:
            return "%d tables in 2.3 s at --delay 0.5" % len(tabs)
        for tab in tabs[:-1]:
            if "pid %d CPython " % t.pid not in tab["procs"]:
                return "no process line: %s" % tab["procs"]
            gil = re.search(r"GIL held (\d+)%", tab["header"])
            # 3 threads spinning: someone holds the GIL nearly always. On
            # 2.7 the old GIL's hand-off leaves _PyThreadState_Current NULL
            # between a release and the next acquire, and a sample landing
            # there sees nobody holding it. Each release wakes a waiter on
            # the other core and the lock changes hands every ~100
            # bytecodes (a few us of this loop), so how much of the time
            # nobody holds it is set by wake-up latencies: measured 66-84%
            # held, 45% with both cores busy, 16% in a CI run. On 2.7 the
            # figure must be there and above 0.
            least = 1 if "-2." in interp.label else 70
            if "freethreaded" in interp.label:
                if gil or "no GIL (free-threaded)" not in tab["header"]:
                    return "free-threaded: want no GIL share: %s" % \
                        tab["header"]
            elif not gil or int(gil.group(1)) < least:
                return "GIL share: %s" % tab["header"]
            if not tab["rows"] or tab["rows"][0]["name"] != "spin":
                return "top row not spin: %s" % tab["rows"][:2]
            if tab["rows"][0]["own"] < 80:
                return "spin only %.1f%% own" % tab["rows"][0]["own"]
            names = sorted(x["name"] for x in tab["threads"])
            if names != ["MainThread", "spin-0", "spin-1", "spin-2"]:
                return "thread pane: %s" % names
            if any(x["pid"] != t.pid for x in tab["threads"]):
                return "thread pane pids: %s" % tab["threads"]
        # --lines: spin's rows carry lines of spin's body; --sort total.
        r = top(["--once", "--delay", "0.5", "--lines", "--sort", "total",
                 "-p", str(t.pid)])
        tabs = parse(r.stdout.decode())
        rows = tabs[0]["rows"] if tabs else []
        lo, hi = body_lines(os.path.join(t.src_dir, "counter.py"), "spin")
        spin = [x for x in rows if x["name"] == "spin"]
        if not spin or any(not lo <= x["line"] <= hi for x in spin):
            return "--lines: spin rows %s, body is lines %d-%d" % (spin, lo,
                                                                   hi)
        tot = [x["total"] for x in rows]
        if tot != sorted(tot, reverse=True):
            return "--sort total not sorted: %s" % tot
        return not_stopped(t)
    finally:
        t.stop()


TMUX_SOCKET = ["pst-test-%d-0" % os.getpid()]


def tmux(*args):
    return subprocess.run(["tmux", "-L", TMUX_SOCKET[0]] + list(args),
                          capture_output=True, timeout=30).stdout.decode()


def tmux_session(cmd):
    """Runs cmd in a new 200x40 session "top" on a server of its own: a
    server told to exit (kill-server returns before it has) can take a new
    session on the same socket down with it (seen once in CI: an empty
    screen in the second run)."""
    tmux("kill-server")
    n = int(TMUX_SOCKET[0].rsplit("-", 1)[1]) + 1
    TMUX_SOCKET[0] = "pst-test-%d-%d" % (os.getpid(), n)
    tmux("new-session", "-d", "-s", "top", "-x", "200", "-y", "40", cmd)
    deadline = time.time() + 10
    while subprocess.run(["tmux", "-L", TMUX_SOCKET[0], "has-session", "-t",
                          "top"], capture_output=True).returncode:
        if time.time() > deadline:
            raise RuntimeError("tmux: no session")
        time.sleep(0.05)


def screen():
    return tmux("capture-pane", "-p", "-t", "top").splitlines()


def screen_rows(lines):
    return [ROW.match(x) for x in lines[4:] if ROW.match(x)]


def wait_for(pred, what, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        lines = screen()
        if pred(lines):
            return lines
        time.sleep(0.1)
    raise RuntimeError("%s; the screen:\n%s" % (what, "\n".join(screen())))


def check_screen(interp):
    """The full-screen view in a real terminal (tmux): table, thread pane,
    keys, resize, q, the terminal given back, the target's end shown."""
    t = pytargets.Target(interp, "counter.py", ["3", "10", "0.5"])
    cmd = "%s top --delay 0.5 -p %d; echo EXIT=$?; sleep 60" % (
        os.path.abspath(PST), t.pid)
    try:
        t.readline()
        tmux_session(cmd)
        # Each check is retried until it holds (a loaded CI machine draws
        # the first tables late and from few samples); a failure shows the
        # screen it last saw.
        wait_for(lambda ls: ls and ls[0].startswith("pystitch top: ")
                 and "thread-samples" in ls[0] and screen_rows(ls),
                 "no table", timeout=30)

        def top_row(ls):
            rows = screen_rows(ls)
            return (rows and rows[0].group(5) == "spin" and
                    float(rows[0].group(1)) >= 80)
        wait_for(top_row, "top row not spin with >= 80% own")
        wait_for(lambda ls: ls[1].startswith("pid %d CPython " % t.pid),
                 "no process line")

        def pane_rows(ls):
            return [THREAD.match(x) for x in ls if THREAD.match(x)]

        def pane(ls):
            return sorted(m.group(5).strip() for m in pane_rows(ls))
        lines = wait_for(lambda ls: pane(ls) == ["MainThread", "spin-0",
                                                 "spin-1", "spin-2"],
                         "thread pane does not name the 4 threads")
        # Selection: Down to spin-1's row, Enter: the table of that thread
        # alone; d: its stack; any key back; p: its process; p: all again.
        rows = pane_rows(lines)
        names = [m.group(5).strip() for m in rows]
        if not rows[0].group(0).startswith(">"):
            return "the first thread is not selected: %s" % rows[0].group(0)
        k = names.index("spin-1")
        tid = int(rows[k].group(2))
        tmux("send-keys", "-t", "top", *(["Down"] * k + ["Enter"]))
        wait_for(lambda ls: ls[2].startswith("table of thread %d spin-1 " %
                                             tid) and
                 [m.group(2) for m in pane_rows(ls)
                  if m.group(0).startswith(">")] == [str(tid)],
                 "Enter: no table of spin-1 (%d), or another selected" % tid)
        wait_for(lambda ls: "table of thread" in ls[2] and top_row(ls),
                 "Enter: spin-1's table has not spin on top")
        tmux("send-keys", "-t", "top", "d")
        lines = wait_for(lambda ls: ls[1].startswith('Thread %d "spin-1"' %
                                                     tid) and
                         any(x.startswith("    spin (") for x in ls) and
                         any(x.startswith("    descend (") for x in ls),
                         "d: no stack of spin-1")
        frames = [x.strip().split()[0] for x in lines[3:] if x.strip()]
        if frames[0] != "spin" or "descend" not in frames[1:3]:
            return "d: spin-1's stack is not spin over descend: %s" % frames
        tmux("send-keys", "-t", "top", "x")
        wait_for(lambda ls: ls[3].lstrip().startswith("%Own"),
                 "a key after d: the table not back")
        tmux("send-keys", "-t", "top", "p")
        wait_for(lambda ls: ls[2].startswith("table of process %d " % t.pid),
                 "p: no table of the process")
        tmux("send-keys", "-t", "top", "p")
        wait_for(lambda ls: ls[2].startswith("window: ") and top_row(ls),
                 "p again: not back to every thread")
        tmux("send-keys", "-t", "top", "2")

        def by_total(ls):
            tot = [float(m.group(2)) for m in screen_rows(ls)]
            return ("sort: total" in ls[2] and tot and
                    tot == sorted(tot, reverse=True) and tot[0] >= 90)
        wait_for(by_total, "2: not sorted by total (first >= 90%)")
        tmux("send-keys", "-t", "top", "l")
        wait_for(lambda ls: "by line" in ls[2] and screen_rows(ls) and
                 all(m.group(7) for m in screen_rows(ls)),
                 "l: not by line, or rows without a line")
        tmux("send-keys", "-t", "top", "w")
        wait_for(lambda ls: "since start" in ls[2], "w: no window change")
        tmux("send-keys", "-t", "top", "t")
        wait_for(lambda ls: not any(x.lstrip().startswith("PID ")
                                    for x in ls), "t: pane still shown")
        tmux("resize-window", "-t", "top", "-x", "70", "-y", "12")
        lines = wait_for(lambda ls: len(ls) == 12 and
                         ls[0].startswith("pystitch top: ") and
                         1 <= len([x for x in ls[4:] if PCT.match(x)]) <= 8
                         and ls[3].lstrip().startswith("%Own"),
                         "resize: layout did not follow")
        if any(len(x) > 70 for x in lines):
            return "resize: a line wider than 70:\n%s" % "\n".join(lines)
        tmux("send-keys", "-t", "top", "q")
        lines = wait_for(lambda ls: any("EXIT=0" in x for x in ls),
                         "q: top did not exit 0")
        if tmux("display-message", "-p", "-t", "top",
                "#{alternate_on}").strip() != "0":
            return "terminal not given back (alternate screen still on)"
        err = not_stopped(t)
        if err:
            return err
        # The target's end: shown, figures kept until q.
        tmux_session(cmd)
        wait_for(lambda ls: ls and screen_rows(ls), "no table (second run)",
                 timeout=30)
        t.stop()
        wait_for(lambda ls: "targets ended" in ls[0] and screen_rows(ls),
                 "the target's end not shown")
        tmux("send-keys", "-t", "top", "q")
        wait_for(lambda ls: any("EXIT=0" in x for x in ls),
                 "q after the end: top did not exit 0")
        return ""
    finally:
        tmux("kill-server")
        t.stop()


def check_error_kinds(interp):
    """A call storm read without stops at 1 kHz (torn reads happen): each
    table's errors are named by kind, and the kinds add up to the count."""
    t = pytargets.Target(interp, "callstorm.py")
    try:
        t.readline()
        seen = 0
        for _ in range(3):
            r = top(["--nonblocking", "--delay", "0.5", "-d", "2.2", "-r",
                     "1000", "-p", str(t.pid)])
            if r.returncode != 0:
                return "exit %d: %s" % (r.returncode, r.stderr.decode())
            for tab in parse(r.stdout.decode()):
                m = re.search(r"errors (\d+) \(([\d.]+)%(?:: ([^)]*))?\)",
                              tab["header"])
                if not m:
                    return "no error figure: %s" % tab["header"]
                n = int(m.group(1))
                kinds = m.group(3) or ""
                named = sum(int(x.split()[0]) for x in kinds.split(", ")
                            if x)
                if named != n:
                    return "errors %d, by kind %r" % (n, kinds)
                seen += n
            if seen:
                print("# %s: %d errors in the tables, named by kind"
                      % (interp.label, seen))
                return not_stopped(t)
        return "no error in 3 runs to name (the storm tore nothing)"
    finally:
        t.stop()


def check_process_lines(interp):
    """top -s on a parent and its 2 spinning children: a line per process,
    each with its threads' counts (the children's one thread active, the
    waiting parent's idle), the header's counts their sum."""
    t = pytargets.Target(interp, "mp.py", ["60"])
    try:
        t.readline()
        r = top(["-s", "--mode", "wall", "--delay", "1", "-d", "3.5", "-p",
                 str(t.pid)])
        if r.returncode != 0:
            return "exit %d: %s" % (r.returncode, r.stderr.decode())
        tabs = parse(r.stdout.decode())
        if len(tabs) < 2:
            return "%d tables" % len(tabs)
        tab = tabs[-2]  # a whole interval with the children attached
        line = re.compile(r"^pid (\d+) CPython \S+.*?, (\d+) active (\d+) "
                          r"idle(?:, ended)?: (.*)$")
        procs = [line.match(x) for x in tab["procs"].splitlines()]
        if len(procs) != 3 or not all(procs):
            return "process lines: %r" % tab["procs"]
        kids = [m for m in procs if int(m.group(1)) != t.pid]
        if len(kids) != 2 or any(m.group(2) != "1" for m in kids):
            return "children not one active thread each: %r" % tab["procs"]
        h = re.search(r"threads (\d+) active (\d+) idle", tab["header"])
        if not h or int(h.group(1)) != sum(int(m.group(2)) for m in procs) \
                or int(h.group(2)) != sum(int(m.group(3)) for m in procs):
            return "header %r against lines %r" % (tab["header"],
                                                   tab["procs"])
        return not_stopped(t)
    finally:
        t.stop()


def check_errors():
    problems = []
    r = top(["--once", "-p", "999999"])
    if r.returncode != 3 or b"no such process" not in r.stderr:
        problems.append("no such pid: exit %d %s" % (r.returncode, r.stderr))
    s = subprocess.Popen(["sleep", "30"])
    try:
        r = top(["--once", "-p", str(s.pid)])
        if r.returncode != 5:
            problems.append("not Python: exit %d %s" % (r.returncode,
                                                        r.stderr))
    finally:
        s.kill()
        s.wait()
    for argv in (["--rate", "0", "-p", "1"], ["--sort", "bad", "-p", "1"],
                 ["--delay", "0", "-p", "1"], ["--rows", "x", "-p", "1"], []):
        r = top(argv)
        if r.returncode != 2 or not r.stderr.startswith(b"pystitch: error:"):
            problems.append("%s: exit %d %s" % (argv, r.returncode, r.stderr))
    return "\n".join(problems)


def main():
    found, skipped = pytargets.interpreters()
    for label, why in skipped:
        report(None, "top " + label, why)
    if not found:
        report(False, "at least one interpreter", "no CPython found")
        return TAP.finish()
    for interp in found:
        for name, fn in (("shares", check_shares_twice),
                         ("intervals", check_intervals)):
            check("top %s %s" % (name, interp.label), fn, interp)
    proc_interp = next((i for i in found if not i.rootfs and
                        "3.12" in i.label), found[0])
    check("top process lines %s" % proc_interp.label, check_process_lines,
          proc_interp)
    screen_interp = next((i for i in found if not i.rootfs and
                          "3.12" in i.label), found[0])
    if not shutil.which("tmux"):
        report(None, "top full screen", "no tmux (tools/install-deps.sh)")
    else:
        check("top full screen in tmux %s" % screen_interp.label,
              check_screen, screen_interp)
    storm_interp = next((i for i in found if "3.9" in i.label), found[0])
    check("top: errors named by kind %s" % storm_interp.label,
          check_error_kinds, storm_interp)
    err = check_errors()
    report(not err, "top: bad input, record's exit codes", err)
    return TAP.finish()


if __name__ == "__main__":
    sys.exit(main())
