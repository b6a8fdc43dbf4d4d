# test_top.py: `pystitch top` in its plain-text mode (stdout not a
# terminal) against real targets: the functions' shares match what the
# target measures of itself, the thread pane names every thread, --once,
# --lines, --sort, intervals, Ctrl-C, bad input with record's exit codes,
# and the target never left stopped. Prints TAP lines and the summary.
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytargets  # noqa: E402
import tap  # noqa: E402

PST = os.environ.get("PST", "./pystitch")
TAP = tap.Tap()
report = TAP.report
ROW = re.compile(r"^\s*([\d.]+)%\s+([\d.]+)%\s+([\d.]+)s\s+([\d.]+)s\s+(\S+) "
                 r"\((.*?)(?::(\d+))?\)$")
THREAD = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S)\s+(\S+)\s+(.*?)\s{2,}(\S.*)$")


def parse(text):
    """Tables of top's plain output: [{header, rows, threads}]."""
    tables, cur, part = [], None, None
    for line in text.splitlines():
        if line.startswith("pystitch top: "):
            cur = {"header": line, "rows": [], "threads": []}
            tables.append(cur)
            part = None
        elif cur is None or not line.strip():
            continue
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
    return subprocess.run([PST, "top"] + args, capture_output=True,
                          timeout=timeout)


def not_stopped(t):
    st = t.states()
    bad = {k: v for k, v in st.items() if v in "tT"}
    return "" if not bad else "target left stopped: %s" % bad


def totals(t):
    while True:
        line = t.readline()
        if line.startswith("totals "):
            return [float(x) for x in line.split()[1:]]


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
        for name, fn in (("shares", check_shares),
                         ("intervals", check_intervals)):
            try:
                err = fn(interp)
            except Exception as e:
                err = "%s: %s" % (type(e).__name__, e)
            report(not err, "top %s %s" % (name, interp.label), err)
    err = check_errors()
    report(not err, "top: bad input, record's exit codes", err)
    return TAP.finish()


if __name__ == "__main__":
    sys.exit(main())
