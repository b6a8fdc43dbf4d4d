# test_push.py: `record --push` against a local ingest endpoint
# (pushrecv.py: Pyroscope's request contract, an independent pprof decoder)
# and `record --rotate`: every interval arrives once with its labels, the
# counts add up to the summary, the server failing (down at start, dying,
# 500, 429, hanging) costs no sample and no rate, the queue bound holds,
# secrets stay out of the logs, rotated files are whole even after
# kill -9; `record --all` finds the host's Python processes. Prints TAP
# and the summary line.
import base64
import os
import re
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pushrecv  # noqa: E402
import pytargets  # noqa: E402
import tap  # noqa: E402
from tap import PST, pystitch  # noqa: E402

TAP = tap.Tap()
report = TAP.report
TMP = tap.tmpdir("push")
SUMMARY = re.compile(
    r"push: (\d+) of (\d+) profiles sent to (\S+) \((\d+) samples\); "
    r"(\d+) failed attempts, (\d+) dropped \(queue full\), (\d+) refused, "
    r"(\d+) unsent at exit")
RECORDED = re.compile(r"recorded (\d+) samples in (\d+) process")
LATE = re.compile(r"(\d+) late ticks, max lag ([\d.]+) ms")


class Spin(pytargets.Target):
    """tests/targets/faults.py spin: four threads in spin_0..spin_3."""

    def __init__(self, interp, env=None):
        old = dict(os.environ)
        os.environ.update(env or {})
        try:
            pytargets.Target.__init__(self, interp, "faults.py",
                                      ["spin", os.path.join(TMP, "counter")])
        finally:
            os.environ.clear()
            os.environ.update(old)
        while self.readline().strip() != "ready":
            pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_record(args, env=None, timeout=90):
    r = pystitch(["record"] + args, timeout, env=env)
    return r.returncode, r.stderr.decode(errors="replace")


def start_record(args):
    return subprocess.Popen([PST, "record"] + args, stderr=subprocess.PIPE)


def figures(err):
    """(summary dict, recorded samples, late ticks) from the stderr."""
    m = SUMMARY.search(err)
    s = None
    if m:
        keys = ["sent", "made", "where", "samples", "failures", "dropped",
                "refused", "unsent"]
        s = dict(zip(keys, m.groups()))
        for k in keys:
            if k != "where":
                s[k] = int(s[k])
    m = RECORDED.search(err)
    late = LATE.search(err)
    return s, int(m.group(1)) if m else None, \
        int(late.group(1)) if late else None


def check_requests(reqs, want_pid=None):
    """The contract of each accepted request, its decoded profile; returns
    (problems, [(pid, time_nanos, duration, samples, profile)])."""
    problems, got = [], []
    for r in reqs:
        q = {k: v[0] for k, v in r["query"].items()}
        if r["method"] != "POST" or r["path"] != "/ingest":
            problems.append("%s %s" % (r["method"], r["path"]))
        for k in ("name", "from", "until", "format", "sampleRate"):
            if k not in q:
                problems.append("no %s in the query %s" % (k, q))
        if q.get("format") != "pprof":
            problems.append("format %s" % q.get("format"))
        try:
            if not int(q["from"]) < int(q["until"]):
                problems.append("from %s until %s" % (q["from"], q["until"]))
        except (KeyError, ValueError):
            problems.append("from/until not numbers: %s" % q)
        body = pushrecv.profile_part(r)
        if body is None:
            problems.append("no multipart 'profile' field (%s)" % r["ctype"])
            continue
        prof = pushrecv.decode_pprof(body)
        app, labels = pushrecv.parse_name(q.get("name", ""))
        pid = int(labels.get("pid", "0"))
        if want_pid and pid != want_pid:
            problems.append("pid label %s, want %d" % (pid, want_pid))
        for count, frames, slabels in prof["samples"]:
            if slabels.get("pid") != pid:
                problems.append("a sample of pid %s in the profile of %d" %
                                (slabels.get("pid"), pid))
                break
        n = sum(s[0] for s in prof["samples"])
        got.append((pid, prof["time_nanos"], prof["duration_nanos"], n, prof,
                    app, labels))
    return problems, got


def no_repeats(got, interval_s):
    """No interval sent twice: per process, the windows start at least
    half an interval apart (a window's last sample may stand for time a
    little past its end, so durations can overlap by one period)."""
    by_pid = {}
    for pid, t0, dur, _, _, _, _ in got:
        by_pid.setdefault(pid, []).append(t0)
    for pid, starts in by_pid.items():
        starts.sort()
        for a, b in zip(starts, starts[1:]):
            if b - a < interval_s * 0.5e9:
                return "process %d: windows at %d and %d" % (pid, a, b)
    return ""


def check_basic(interp):
    t = Spin(interp, {"RANK": "3", "WORLD_SIZE": "8"})
    recv = pushrecv.Receiver()
    try:
        rc, err = run_record(["-p", str(t.pid), "--push", recv.url,
                              "--push-interval", "1", "-d", "4.5",
                              "--app", "pst-test", "--label", "env=ci",
                              "--label", "zone=a.b"])
        problems = []
        if rc != 0:
            return "exit %d: %s" % (rc, err)
        s, recorded, _ = figures(err)
        if not s:
            return "no push summary: %s" % err
        reqs = recv.accepted()
        p, got = check_requests(reqs, t.pid)
        problems += p
        if len(reqs) < 4 or s["sent"] != len(reqs) or s["made"] != len(reqs):
            problems.append("%d requests, summary %s" % (len(reqs), s))
        total = sum(g[3] for g in got)
        if total != s["samples"] or total != recorded:
            problems.append("samples: %d in the profiles, %d pushed, %d "
                            "recorded" % (total, s["samples"], recorded))
        for _, _, _, n, prof, app, labels in got:
            want = {"pid": str(t.pid), "env": "ci", "zone": "a.b",
                    "command": "faults.py", "rank": "3", "world_size": "8",
                    "hostname": socket.gethostname()}
            if app != "pst-test":
                problems.append("app %r" % app)
            for k, v in want.items():
                if labels.get(k) != v:
                    problems.append("label %s=%r, want %r (%s)" %
                                    (k, labels.get(k), v, labels))
            funcs = {f for _, frames, _ in prof["samples"] for f in frames}
            if not any(f.startswith("spin_") for f in funcs):
                problems.append("no spin_ frame in a window: %s" %
                                sorted(funcs)[:10])
            threads = {lab.get("thread") for _, _, lab in prof["samples"]}
            if not any(x and x.startswith("spin-") for x in threads):
                problems.append("no thread label spin-N: %s" % threads)
        problems.append(no_repeats(got, 1))
        q = reqs[0]["query"]
        if q.get("sampleRate") != ["100"] or q.get("spyName") != ["pystitch"]:
            problems.append("sampleRate/spyName: %s" % q)
        print("# basic: %d intervals, %d samples, %s" % (len(reqs), total,
                                                        s))
        return "\n".join(x for x in problems if x)
    finally:
        recv.stop()
        t.stop()


def curl_mapped(args):
    """Whether a running `record ARGS` has libcurl mapped, 1 s in."""
    p = start_record(args)
    try:
        time.sleep(1.0)
        with open("/proc/%d/maps" % p.pid) as f:
            return "libcurl" in f.read()
    finally:
        p.terminate()
        p.communicate(timeout=30)


def check_curl_on_demand(interp):
    """A shared build maps libcurl (and its ~30 libraries) only when
    --push asks for it: every other run starts without their cost."""
    if "static" in pystitch(["--version"], 10).stdout.decode().split(
            "\n")[1]:
        return None
    t = Spin(interp)
    recv = pushrecv.Receiver()
    try:
        out = os.path.join(TMP, "curl.pprof")
        plain = curl_mapped(["-p", str(t.pid), "-d", "5", "-o", out])
        pushed = curl_mapped(["-p", str(t.pid), "-d", "5", "--push",
                              recv.url, "-o", out])
        print("# libcurl mapped: %s without --push, %s with it" %
              (plain, pushed))
        if plain or not pushed:
            return "libcurl mapped without --push: %s, with it: %s" % (
                plain, pushed)
        return ""
    finally:
        recv.stop()
        t.stop()


def check_failing(interp, mode, bad_s, timeout="2"):
    """The server answers `mode` for bad_s seconds, then takes profiles:
    everything made arrives once, the sampler keeps its rate."""
    t = Spin(interp)
    recv = pushrecv.Receiver(mode, hang_s=8)
    try:
        nthreads = len(t.states())
        p = start_record(["-p", str(t.pid), "--push", recv.url,
                          "--push-interval", "0.5", "-d", "5", "--idle",
                          "--push-timeout", timeout])
        time.sleep(bad_s)
        recv.mode = "ok"
        _, err = p.communicate(timeout=90)
        err = err.decode(errors="replace")
        if p.returncode != 0:
            return "exit %d: %s" % (p.returncode, err)
        s, recorded, late = figures(err)
        if not s:
            return "no push summary: %s" % err
        problems = []
        reqs = recv.accepted()
        pr, got = check_requests(reqs, t.pid)
        problems += pr
        failed = [r for r in recv.requests if r["status"] != 200]
        if mode != "hang" and not failed:
            problems.append("the server never failed a request")
        if s["failures"] < 1:
            problems.append("no failed attempt counted: %s" % s)
        if s["sent"] != s["made"] or s["unsent"] or s["dropped"]:
            problems.append("not all sent: %s" % s)
        total = sum(g[3] for g in got)
        if total != recorded:
            problems.append("%d samples arrived, %d recorded" % (total,
                                                               recorded))
        problems.append(no_repeats(got, 0.5))
        # Every thread (--idle) at 100 Hz for 5 s.
        if recorded < 0.85 * nthreads * 500 or late is None or late > 10:
            problems.append("rate not kept: %s samples of %d threads, %s "
                            "late ticks" % (recorded, nthreads, late))
        if "retrying" not in err:
            problems.append("no warning of the failure: %s" % err)
        print("# %s for %.1f s: %d requests failed, then %s; %s late ticks" %
              (mode, bad_s, len(failed), s, late))
        return "\n".join(x for x in problems if x)
    finally:
        recv.stop()
        t.stop()


def check_down_up(interp):
    """No server at start (a warning, recording goes on), then one, then
    it dies, then it is back: all arrives once."""
    t = Spin(interp)
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    recv = None
    try:
        p = start_record(["-p", str(t.pid), "--push", url,
                          "--push-interval", "0.5", "-d", "6",
                          "--push-timeout", "2"])
        time.sleep(1.5)
        recv = pushrecv.Receiver(port=port)
        time.sleep(1.5)
        recv.stop()
        first = recv.accepted()
        time.sleep(1.5)
        recv2 = pushrecv.Receiver(port=port)
        _, err = p.communicate(timeout=90)
        err = err.decode(errors="replace")
        recv2.stop()
        if p.returncode != 0:
            return "exit %d: %s" % (p.returncode, err)
        s, recorded, late = figures(err)
        if not s:
            return "no push summary: %s" % err
        reqs = first + recv2.accepted()
        problems, got = check_requests(reqs, t.pid)
        if s["sent"] != s["made"] or s["unsent"] or s["dropped"]:
            problems.append("not all sent: %s" % s)
        if len(reqs) != s["sent"]:
            problems.append("%d arrived, %d sent" % (len(reqs), s["sent"]))
        if not first or not recv2.accepted():
            problems.append("arrivals: %d before, %d after the restart" %
                            (len(first), len(recv2.accepted())))
        total = sum(g[3] for g in got)
        if total != recorded:
            problems.append("%d samples arrived, %d recorded" % (total,
                                                               recorded))
        problems.append(no_repeats(got, 0.5))
        if "cannot be reached now" not in err:
            problems.append("no warning at start that the server is down: "
                            "%s" % err)
        print("# down, up, down, up: %d + %d arrived; %s; %s late ticks" %
              (len(first), len(recv2.accepted()), s, late))
        return "\n".join(x for x in problems if x)
    finally:
        t.stop()


def check_queue_bound(interp):
    """Never a server: at most --push-queue profiles kept, the oldest
    dropped and counted."""
    t = Spin(interp)
    try:
        url = "http://127.0.0.1:%d" % free_port()
        nthreads = len(t.states())
        rc, err = run_record(["-p", str(t.pid), "--push", url, "--idle",
                              "--push-interval", "0.4", "-d", "3",
                              "--push-queue", "2", "--push-timeout", "0.5"])
        if rc != 0:
            return "exit %d: %s" % (rc, err)
        s, recorded, _ = figures(err)
        if not s:
            return "no push summary: %s" % err
        problems = []
        if s["sent"] or s["made"] < 6 or s["unsent"] > 2 or \
                s["dropped"] + s["unsent"] != s["made"]:
            problems.append("queue: %s" % s)
        if not recorded or recorded < 0.85 * nthreads * 300:
            problems.append("%s samples of %d threads recorded" %
                            (recorded, nthreads))
        if "last error" not in err or "cannot be reached now" not in err:
            problems.append("no warning at start or no last error: %s" % err)
        print("# no server: %s" % s)
        return "\n".join(problems)
    finally:
        t.stop()


def check_refused(interp):
    """A 400 is the server refusing that profile: counted, not retried."""
    t = Spin(interp)
    recv = pushrecv.Receiver("400")
    try:
        rc, err = run_record(["-p", str(t.pid), "--push", recv.url,
                              "--push-interval", "0.5", "-d", "1.8"])
        s, _, _ = figures(err)
        if rc != 0 or not s:
            return "exit %d: %s" % (rc, err)
        if s["refused"] != s["made"] or s["failures"] or s["sent"] or \
                len(recv.requests) != s["made"]:
            return "refused: %s, %d requests" % (s, len(recv.requests))
        return ""
    finally:
        recv.stop()
        t.stop()


def check_secrets(interp):
    """A bearer token from a file and basic auth from the environment are
    sent, never printed; the tenant header is sent."""
    t = Spin(interp)
    recv = pushrecv.Receiver()
    try:
        tok = os.path.join(TMP, "token")
        with open(tok, "w") as f:
            f.write("tok-s3cret-42\n")
        problems = []
        rc, err = run_record(["-p", str(t.pid), "--push", recv.url,
                              "--push-interval", "0.5", "-d", "1.2", "-vv",
                              "--push-token-file", tok, "--tenant", "team-a"])
        h = recv.accepted()[0]["headers"] if recv.accepted() else {}
        if rc != 0 or h.get("Authorization") != "Bearer tok-s3cret-42" or \
                h.get("X-Scope-OrgID") != "team-a":
            problems.append("token: exit %d, headers %s" % (rc, h))
        if "s3cret" in err:
            problems.append("the token is in the log: %s" % err)
        recv.requests = []
        rc, err = run_record(["-p", str(t.pid), "--push", recv.url,
                              "--push-interval", "0.5", "-d", "1.2", "-vv"],
                             env={"PYSTITCH_PUSH_BASIC_AUTH": "bob:pw-s3cret"})
        h = recv.accepted()[0]["headers"] if recv.accepted() else {}
        want = "Basic " + base64.b64encode(b"bob:pw-s3cret").decode()
        if rc != 0 or h.get("Authorization") != want:
            problems.append("basic: exit %d, headers %s" % (rc, h))
        if "s3cret" in err:
            problems.append("the password is in the log: %s" % err)
        return "\n".join(problems)
    finally:
        recv.stop()
        t.stop()


def check_bad_input(interp):
    t = Spin(interp)
    problems = []
    try:
        cases = [
            (["--push", "ftp://x.example"], "scheme"),
            (["--push", "not a url"], "URL"),
            (["--push", "http://127.0.0.1:1", "--push-token-file",
              os.path.join(TMP, "missing")], "cannot read"),
            (["--push", "http://127.0.0.1:1", "--label", "a b=c"], "--label"),
            (["--push", "http://127.0.0.1:1", "--label", "k=v,w"], "--label"),
            (["--push", "http://127.0.0.1:1", "--app", "a/b"], "--app"),
            (["--push-interval", "5"], "go with --push"),
            (["--rotate", "1", "-o", os.path.join(TMP, "plain.pprof")],
             "pattern"),
        ]
        for args, want in cases:
            rc, err = run_record(["-p", str(t.pid), "-d", "1"] + args)
            lines = [x for x in err.splitlines() if x.strip()]
            if rc != 2 or len(lines) != 1 or want not in err:
                problems.append("%s: exit %d, %r" % (args, rc, err))
        return "\n".join(problems)
    finally:
        t.stop()


def rotated(d):
    files = sorted(f for f in os.listdir(d) if f.endswith(".pprof"))
    counts, bad = [], []
    for f in files:
        try:
            with open(os.path.join(d, f), "rb") as fh:
                prof = pushrecv.decode_pprof(fh.read())
            counts.append(sum(s[0] for s in prof["samples"]))
        except Exception as e:
            bad.append("%s: %s" % (f, e))
    return files, counts, bad


def check_rotate(interp):
    t = Spin(interp)
    d = os.path.join(TMP, "rot")
    os.makedirs(d)
    try:
        rc, err = run_record(["-p", str(t.pid), "--rotate", "1", "-d", "3.5",
                              "-f", "pprof", "-o",
                              os.path.join(d, "%Y%m%dT%H%M%S.pprof")])
        if rc != 0:
            return "exit %d: %s" % (rc, err)
        files, counts, bad = rotated(d)
        _, recorded, _ = figures(err)
        problems = bad
        if len(files) < 3 or sum(counts) != recorded:
            problems.append("%d files with %s samples, %s recorded" %
                            (len(files), counts, recorded))
        left = [f for f in os.listdir(d) if not f.endswith(".pprof")]
        if left:
            problems.append("other files left: %s" % left)
        print("# rotate 1 s over 3.5 s: %d files, samples %s" %
              (len(files), counts))
        return "\n".join(problems)
    finally:
        t.stop()


def check_rotate_kill(interp):
    t = Spin(interp)
    d = os.path.join(TMP, "rotkill")
    os.makedirs(d)
    try:
        p = start_record(["-p", str(t.pid), "--rotate", "0.3", "-f", "pprof",
                          "-o", os.path.join(d, "w-%H%M%S.pprof")])
        time.sleep(2.2)
        p.kill()
        p.wait()
        files, counts, bad = rotated(d)
        problems = bad
        if len(files) < 4:
            problems.append("%d files before the kill" % len(files))
        st = t.states()
        if any(v == "t" or v == "T" for v in st.values()):
            problems.append("target left stopped: %s" % st)
        print("# kill -9 after 2.2 s of 0.3 s windows: %d whole files" %
              len(files))
        return "\n".join(problems)
    finally:
        t.stop()


def check_all(interp, container):
    """--all: processes started during the run (plain; in a container;
    one that execs Python; one excluded; one not Python) are found within
    a second or two, each profiled under its own root and pushed with its
    own labels; none is left stopped."""
    token = "psthost%d" % os.getpid()
    recv = pushrecv.Receiver()
    out = os.path.join(TMP, "all.folded")
    procs = []
    problems = []
    try:
        p = start_record(["--all", "--match", token, "--exclude", "EXCL",
                          "-d", "6", "-f", "folded", "-o", out,
                          "--push", recv.url, "--push-interval", "1"])
        time.sleep(0.5)
        plain = Spin.__new__(Spin)
        pytargets.Target.__init__(plain, interp, "faults.py",
                                  ["spin", os.path.join(TMP, token + "-a")])
        procs.append(plain)
        excl = pytargets.Target(interp, "faults.py",
                                ["spin", os.path.join(TMP, token + "-EXCL")])
        procs.append(excl)
        other = subprocess.Popen(["sh", "-c", "sleep 4", token])
        script = os.path.join(pytargets.TARGETS, "faults.py")
        execd = subprocess.Popen(
            ["sh", "-c", 'sleep 1; exec "$0" "$1" spin "$2"', interp.exe,
             script, os.path.join(TMP, token + "-x")],
            stdout=subprocess.DEVNULL)
        cont = None
        if container:
            cont = pytargets.Target(container, "faults.py",
                                    ["spin", "/tmp/%s-c" % token])
            procs.append(cont)
        _, err = p.communicate(timeout=60)
        err = err.decode(errors="replace")
        if p.returncode != 0:
            return "exit %d: %s" % (p.returncode, err)
        roots = {}
        for stack, count in pytargets.folded(out):
            m = re.match(r"process (\d+) (\[[^]]*\] )?", stack[0])
            if m:
                pid = int(m.group(1))
                roots[pid] = roots.get(pid, 0) + count
                if m.group(2) and "container" in m.group(2):
                    roots.setdefault("containers", set()).add(pid)
        want = {"plain": plain.pid, "exec'd": execd.pid}
        if cont:
            want["container"] = cont.pid
        for what, pid in want.items():
            if not roots.get(pid):
                problems.append("no samples of the %s process %d: %s" %
                                (what, pid, roots))
        for what, pid in (("excluded", excl.pid), ("non-Python", other.pid)):
            if roots.get(pid):
                problems.append("the %s process %d was recorded" %
                                (what, pid))
        if cont and cont.pid not in roots.get("containers", set()):
            problems.append("the container's root has no container tag")
        labels = {}
        for r in recv.accepted():
            _, lab = pushrecv.parse_name(r["query"]["name"][0])
            labels[int(lab["pid"])] = lab
        for what, pid in want.items():
            if pid not in labels:
                problems.append("nothing pushed for the %s process %d" %
                                (what, pid))
        if cont and not labels.get(cont.pid, {}).get("container"):
            problems.append("no container label: %s" % labels.get(cont.pid))
        m = re.search(r"--all: (\d+) scans of /proc \(([\d.]+) ms each", err)
        if not m or int(m.group(1)) < 5:
            problems.append("scans: %s" % err)
        for t in procs:
            st = t.states()
            if any(v in "tT" for v in st.values()):
                problems.append("process %d left stopped: %s" % (t.pid, st))
        print("# --all: roots %s; %s" % (
            {k: v for k, v in roots.items() if k != "containers"},
            m.group(0) if m else "no scan line"))
        return "\n".join(problems)
    finally:
        recv.stop()
        for t in procs:
            t.stop()
        for x in ("other", "execd"):
            if x in locals():
                locals()[x].kill()
                locals()[x].wait()


def run(name, fn, *args):
    """Reports the check fn(*args), its seconds added to the name; None
    passes."""
    TAP.check(name, fn, *args, timed=True, skip=None)


def main():
    if shutil.which("protoc") is None:
        report(None, "push", "protoc absent (apt-get install "
               "protobuf-compiler): no independent pprof decoder")
        return TAP.finish()
    found, _ = pytargets.interpreters()
    local = [i for i in found if not i.rootfs]
    if not local:
        report(False, "a local interpreter", "no CPython found")
        return TAP.finish()
    interp = local[-1]
    print("# interpreter %s" % interp.label)
    run("push: every interval once, labels, counts add up", check_basic,
        interp)
    run("push: libcurl loaded only by --push", check_curl_on_demand, interp)
    run("push: server answers 500, then takes profiles", check_failing,
        interp, "500", 2.0)
    run("push: server answers 429, then takes profiles", check_failing,
        interp, "429", 2.0)
    run("push: server hangs past --push-timeout, rate kept", check_failing,
        interp, "hang", 1.0, "1")
    run("push: server down at start, up, dies, back", check_down_up, interp)
    run("push: --push-queue bound, oldest dropped and counted",
        check_queue_bound, interp)
    run("push: 4xx refusal counted, not retried", check_refused, interp)
    run("push: token, basic auth and tenant sent, never logged",
        check_secrets, interp)
    run("push/rotate: bad input, exit 2 with one line", check_bad_input,
        interp)
    run("rotate: a whole pprof file per window", check_rotate, interp)
    run("rotate: kill -9 leaves only whole files", check_rotate_kill, interp)
    conts = [i for i in found if i.rootfs]
    if not conts:
        print("# --all: no container rootfs (tests/setup-rootfs.sh): the "
              "container case is left out")
    run("--all: new, exec'd and containerised processes found and pushed "
        "with their labels, excluded and non-Python ones left",
        check_all, interp, conts[0] if conts else None)
    shutil.rmtree(TMP, ignore_errors=True)
    return TAP.finish()


if __name__ == "__main__":
    sys.exit(main())
