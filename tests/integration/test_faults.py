# test_faults.py: the target is never harmed. pystitch killed at random
# moments (never a thread left stopped, the target keeps going), stopped by
# signals (a whole, valid profile), targets that exit, are killed, exec(),
# fork(), get SIGSTOP, churn threads, or whose pid is reused; memory reads
# with process_vm_readv forbidden; and what the binaries may and may not
# do (no writes to the target, no symlink followed, sudo's user for
# `-- command`). Prints TAP lines and "N passed, M failed, K skipped".
#
# bench/faults.py runs the same checks longer (more kills, longer churn).
# PST_FAULTS_SEED fixes the random kill delays (the seed is printed).
import glob
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytargets  # noqa: E402
import tap  # noqa: E402
from tap import BUILD, PST, pystitch, tmpdir  # noqa: E402

NO_VM_READV = os.path.join(BUILD, "tests", "helpers", "no-vm-readv")
TAP = tap.Tap()
report = TAP.report
TMP = tmpdir("faults")
THREAD_ROOT = re.compile(r'^thread (\d+) "(.*)"$')
SERIAL = itertools.count()


def modes():
    """(label, extra record options): every way of reading stacks. A mode
    that `record --help` lists (such as --native, once it exists) joins in
    by itself."""
    out = [("default", []), ("blocking", ["--blocking"])]
    try:
        help_text = pystitch(["record", "--help"], timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        help_text = b""
    if b"--native" in help_text:
        out.append(("native", ["--native"]))
    return out


# ---- the target and its health ----

def thread_states(pid):
    """{tid: state letter} of every thread of pid (empty once it is gone)."""
    res = {}
    for path in glob.glob("/proc/%d/task/*/stat" % pid):
        try:
            with open(path, errors="replace") as f:  # comm: any bytes
                res[int(path.split("/")[4])] = \
                    f.read().rsplit(")", 1)[1].split()[0]
        except (IOError, OSError, IndexError):
            pass  # the thread ended meanwhile
    return res


def stopped_threads(pid, grace=1.0):
    """Threads of pid in state T or t still after `grace` seconds (a stop
    that is ending gets that long), as {tid: state}; {} when none."""
    deadline = time.time() + grace
    while True:
        left = {t: s for t, s in thread_states(pid).items() if s in "tT"}
        if not left or time.time() > deadline:
            return left
        time.sleep(0.02)


def traced_threads(pid):
    """How many threads of pid have a tracer right now."""
    n = 0
    for path in glob.glob("/proc/%d/task/*/status" % pid):
        try:
            with open(path, errors="replace") as f:
                n += "TracerPid:\t0\n" not in f.read()
        except (IOError, OSError):
            pass
    return n


class Faults(pytargets.Target):
    """tests/targets/faults.py: four spinners and a main thread that write
    their progress counters to a file."""

    def __init__(self, interp, mode, args=()):
        self.counter = os.path.join(TMP, "counter-%d-%f" % (os.getpid(),
                                                            time.time()))
        pytargets.Target.__init__(self, interp, "faults.py",
                                  [mode, self.counter] + list(args))
        while self.readline().strip() != "ready":
            pass

    def counters(self):
        try:
            with open(self.counter) as f:
                return [int(x) for x in f.read().split()]
        except (IOError, OSError, ValueError):
            return None

    def progresses(self, within=5.0):
        """"" when the main thread and every spinner advance within
        `within` seconds, else what did not."""
        first = self.counters()
        deadline = time.time() + within
        while time.time() < deadline:
            time.sleep(0.05)
            now = self.counters()
            if first and now and all(b > a for a, b in zip(first, now)):
                return ""
        return "no progress in %.0f s: counters %s then %s" % (
            within, first, self.counters())


folded = pytargets.folded


def names_in(path):
    """Function names of every frame of a folded profile, with counts."""
    res = {}
    for stack, count in folded(path):
        for fr in stack:
            name = fr.split(" (")[0].split(".")[-1]
            res[name] = res.get(name, 0) + count
    return res


def speedscope_names(path):
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    samples = sum(len(p.get("samples", [])) for p in d["profiles"])
    return samples, set(fr["name"].split(".")[-1]
                        for fr in d["shared"]["frames"])


def leftovers(directory):
    """Temporary files left in directory by an interrupted save."""
    return [n for n in os.listdir(directory) if n.endswith(".tmp")]


def out_path(tag):
    d = os.path.join(TMP, "out-%s-%d" % (tag, next(SERIAL)))
    os.mkdir(d)
    return d, os.path.join(d, "profile")


def spin_seen(names):
    return sum(1 for k in range(4) if names.get("spin_%d" % k))


# ---- 1. SIGKILL at random moments ----

def kill_loop(interp, mode, kills, rng, stats=None):
    """Kills `record` with SIGKILL `kills` times, each 0-300 ms after its
    start (so also during the attach and, with --blocking, while a thread
    is stopped). Returns "" or the problems."""
    t = Faults(interp, "spin")
    problems = []
    stats = stats if stats is not None else {}
    try:
        for i in range(kills):
            d, out = out_path("kill")
            p = subprocess.Popen([PST, "record", "-p", str(t.pid), "-r",
                                  "1000", "-f", "folded", "-o", out] + mode,
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            delay = rng.uniform(0, 0.3)
            time.sleep(delay)
            stats["traced_at_kill"] = stats.get("traced_at_kill", 0) + \
                (traced_threads(t.pid) > 0)
            p.kill()
            p.wait()
            stats["tried"] = stats.get("tried", 0) + 1
            left = stopped_threads(t.pid)
            if left:
                problems.append("kill %d at %.0f ms: threads left stopped: "
                                "%s" % (i, delay * 1000, left))
                for tid in left:  # free them for the next rounds
                    os.kill(t.pid, signal.SIGCONT)
            if os.listdir(d):
                problems.append("kill %d: files left: %s" % (
                    i, os.listdir(d)))
            if t.proc.poll() is not None:
                problems.append("target died (status %s)" % t.proc.poll())
                break
            if not left:
                stats["survived"] = stats.get("survived", 0) + 1
        p = t.progresses()
        if p:
            problems.append(p)
    finally:
        t.stop()
    return "\n".join(problems[:10])


# ---- 2. SIGINT, SIGTERM, SIGHUP while sampling ----

def check_signal(interp, mode, sig, fmt):
    t = Faults(interp, "spin")
    d, out = out_path("sig")
    try:
        p = subprocess.Popen([PST, "record", "-v", "-p", str(t.pid), "-r",
                              "500", "-f", fmt, "-o", out] + mode,
                             stderr=subprocess.PIPE)
        # Attached (then the signal handlers are set up at once), however
        # loaded the machine is; then sample a while.
        first = p.stderr.readline()
        if b"recording process" not in first:
            p.kill()
            p.wait()
            return "record did not start: %r" % first
        time.sleep(0.8)
        p.send_signal(sig)
        try:
            _, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return "record still running 20 s after the signal"
        problems = []
        if p.returncode != 0:
            problems.append("exit %d: %s" % (p.returncode, err))
        if fmt == "folded":
            names = names_in(out) if os.path.exists(out) else {}
            samples = sum(names.values())
        else:
            samples, names = speedscope_names(out) if os.path.exists(out) \
                else (0, set())
            names = dict.fromkeys(names, 1)
        if samples == 0 or spin_seen(names) < 4:
            problems.append("profile without the four spinners (%d "
                            "samples): %s" % (samples, sorted(names)[:20]))
        if leftovers(d):
            problems.append("temporary files left: %s" % leftovers(d))
        left = stopped_threads(t.pid)
        if left:
            problems.append("threads left stopped: %s" % left)
        problems.append(t.progresses())
        return "\n".join(x for x in problems if x)
    finally:
        t.stop()


# ---- 3. what the target does while it is recorded ----

def record_until_done(args, timeout):
    """Runs record to its end; (returncode, stderr, seconds, out path)."""
    d, out = out_path("life")
    start = time.time()
    try:
        r = pystitch(["record", "-f", "folded", "-o", out] + args,
                     timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "still running after %d s" % timeout, timeout, out
    return r.returncode, r.stderr.decode(errors="replace"), \
        time.time() - start, out


def expect_profile(rc, err, out, want, unwanted=()):
    problems = []
    if rc is None:
        return err
    if rc != 0:
        problems.append("exit %d: %s" % (rc, err))
    names = names_in(out) if os.path.exists(out) else {}
    for w in want:
        if not names.get(w):
            problems.append("no sample of %s: %s" % (w, sorted(names)[:20]))
    for u in unwanted:
        if names.get(u):
            problems.append("%d samples of %s" % (names[u], u))
    return "\n".join(problems)


def check_exits(interp, mode):
    t = Faults(interp, "spin", ["1.5"])
    try:
        # --idle (wall): progress_for sleeps between its steps
        rc, err, took, out = record_until_done(["-p", str(t.pid), "--idle"] +
                                               mode, 30)
        p = expect_profile(rc, err, out, ["spin_0", "progress_for"])
        return p or ("went on %.1f s" % took if took > 8 else "")
    finally:
        t.stop()


def check_killed(interp, mode):
    """SIGKILL of the target 0.5 s after pystitch attached (said with -v;
    a fixed delay from the start raced a slow attach under ASan)."""
    t = Faults(interp, "spin")
    d, out = out_path("killed")
    try:
        start = time.time()
        p = subprocess.Popen([PST, "record", "-f", "folded", "-o", out, "-v",
                              "-p", str(t.pid)] + mode,
                             stderr=subprocess.PIPE)
        seen = b""
        while b"recording process" not in seen:
            line = p.stderr.readline()
            if not line:
                break
            seen += line
        time.sleep(0.5)
        os.kill(t.pid, signal.SIGKILL)
        try:
            _, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return "still running 30 s after the kill"
        took = time.time() - start
        err = (seen + err).decode(errors="replace")
        problem = expect_profile(p.returncode, err, out, ["spin_0"])
        return problem or ("went on %.1f s" % took if took > 8 else "")
    finally:
        t.stop()


def check_exec_other(interp, mode):
    """exec() of a program that is not Python: the recording ends (while
    that program still runs) with the profile of the Python part."""
    t = Faults(interp, "exec", ["1", "/bin/sleep", "60"])
    try:
        rc, err, took, out = record_until_done(["-p", str(t.pid)] + mode, 30)
        p = expect_profile(rc, err, out, ["spin_0"])
        if not p and took > 10:
            p = "went on %.1f s after exec" % took
        if not p and t.proc.poll() is not None:
            p = "the exec'd program did not keep running"
        return p
    finally:
        t.stop()


def check_exec_while_stopping(interp, mode):
    """exec() while pystitch stops threads at 2 kHz, 8 times: a thread
    seized in the middle of the target's execve() must neither hang
    pystitch (an interrupt the exec dropped was waited for forever: about
    1 run in 5 went on until killed) nor stay traced in the new program."""
    for k in range(8):
        t = Faults(interp, "exec", ["0.%d" % (2 + k % 7), "/bin/sleep", "60"])
        try:
            rc, err, took, out = record_until_done(
                ["-p", str(t.pid), "-r", "2000"] + mode, 15)
            if rc is None or took > 10:
                return "run %d: went on %.1f s after exec: %s" % (k, took,
                                                                 err)
            with open("/proc/%d/status" % t.pid) as f:
                tracer = [x for x in f if x.startswith("TracerPid:")]
            if tracer and tracer[0].split()[1] != "0":
                return "run %d: the exec'd program is still traced" % k
        finally:
            t.stop()
    return ""


def check_exec_python(interp, mode):
    """exec() of Python again: the new program is recorded as well."""
    if interp.rootfs:
        return None
    code = ("import time\n"
            "def after_exec():\n"
            "    end = time.time() + 1.5\n"
            "    while time.time() < end:\n"
            "        pass\n"
            "after_exec()\n")
    t = Faults(interp, "exec", ["1", interp.exe, "-c", code])
    try:
        rc, err, took, out = record_until_done(["-p", str(t.pid), "-v"] +
                                               mode, 30)
        p = expect_profile(rc, err, out, ["spin_0", "after_exec"])
        return p and "%s; pystitch said: %s" % (p, err[-600:])
    finally:
        t.stop()


def check_fork(interp, mode):
    """A fork()ed child is not recorded without --subprocesses, and is
    with it."""
    t = Faults(interp, "fork", ["30"])
    try:
        child = int(t.readline().split()[1])
        problems = []
        for sub in ([], ["-s"]):
            rc, err, _, out = record_until_done(
                ["-p", str(t.pid), "-d", "1.5"] + mode + sub, 30)
            want = ["spin_0"] + (["child_only"] if sub else [])
            unwanted = [] if sub else ["child_only"]
            p = expect_profile(rc, err, out, want, unwanted)
            if p:
                problems.append("%s: %s" % (sub or "no -s", p))
        os.kill(child, signal.SIGKILL)
        return "\n".join(problems)
    finally:
        t.stop()


def check_sigstop(interp, mode):
    """SIGSTOP while recorded: the target stays in T (pystitch neither
    resumes it nor hangs on it), then continues after SIGCONT."""
    t = Faults(interp, "spin")
    d, out = out_path("stop")
    problems = []
    try:
        p = subprocess.Popen([PST, "record", "-p", str(t.pid), "-r", "500",
                              "--idle", "-f", "folded", "-o", out] + mode,
                             stderr=subprocess.PIPE)
        time.sleep(0.5)
        os.kill(t.pid, signal.SIGSTOP)
        deadline = time.time() + 3
        while any(s != "T" for s in thread_states(t.pid).values()):
            if time.time() > deadline:
                problems.append("not stopped 3 s after SIGSTOP: %s" %
                                thread_states(t.pid))
                break
            time.sleep(0.01)
        for _ in range(50):  # 1 s of polls while sampled
            st = thread_states(t.pid)
            moved = {k: v for k, v in st.items() if v != "T"}
            if moved:
                problems.append("while stopped, threads in %s" % moved)
                break
            time.sleep(0.02)
        p.send_signal(signal.SIGINT)
        try:
            _, err = p.communicate(timeout=20)
            if p.returncode != 0:
                problems.append("exit %d: %s" % (p.returncode, err))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            problems.append("record hung on a stopped target")
        time.sleep(0.2)
        st = thread_states(t.pid)
        if any(s != "T" for s in st.values()):
            problems.append("resumed by pystitch: %s" % st)
        os.kill(t.pid, signal.SIGCONT)
        problems.append(t.progresses())
        if os.path.exists(out) and spin_seen(names_in(out)) < 4:
            problems.append("profile without the spinners")
        return "\n".join(x for x in problems if x)
    finally:
        os.kill(t.pid, signal.SIGCONT)
        t.stop()


def check_churn(interp, mode, rate=500, seconds=10, figures=None):
    """`rate` threads started and ended per second for `seconds`: every
    sample of a thread holds only that thread's function (f_cK in thread
    "cK", and the K the thread logged for its tid)."""
    log = os.path.join(TMP, "churn-%d.log" % next(SERIAL))
    t = Faults(interp, "churn", [str(rate), str(seconds), log])
    try:
        start = time.time()
        rc, err, took, out = record_until_done(
            ["-p", str(t.pid), "-r", "200", "--threads", "--idle"] + mode,
            seconds + 60)
        t.proc.wait()
        if figures is not None:
            figures.update(target_s=time.time() - start, record_s=took)
        if rc != 0:
            return "exit %s: %s" % (rc, err)
        k_of = {}
        churned = 0
        with open(log) as f:
            for line in f:
                w = line.split()
                if w[0] == "churned":
                    churned = int(w[1])
                else:
                    # A tid may be reused within the run (pid_max is 32768
                    # here: 15,000 threads in 30 s wrap it): keep every K.
                    k_of.setdefault(int(w[0]), set()).add(int(w[1]))
        wrong, seen, samples = [], set(), 0
        for stack, count in folded(out):
            m = THREAD_ROOT.match(stack[0])
            if not m:
                wrong.append("no thread root: %s" % stack[0])
                continue
            tid, name = int(m.group(1)), m.group(2)
            ks = set(int(x) for x in re.findall(r"(?:^|;|\.)f_c(\d+) \(",
                                                ";".join(stack)))
            if not ks:
                continue
            samples += count
            seen.add(tid)
            if len(ks) > 1 or (re.match(r"c\d+$", name) and
                               name != "c%d" % min(ks)) or \
                    min(ks) not in k_of.get(tid, ks):
                wrong.append("thread %d %r (logged f_c%s) holds %s" % (
                    tid, name, sorted(k_of.get(tid, ())),
                    ["f_c%d" % k for k in ks]))
        if figures is not None:
            figures.update(churned=churned, threads_sampled=len(seen),
                           churn_samples=samples, wrong=len(wrong))
        if churned < rate * seconds / 4:
            wrong.append("only %d threads churned, want %d" % (
                churned, rate * seconds))
        if len(seen) < 20:
            wrong.append("only %d churned threads sampled" % len(seen))
        return "\n".join(wrong[:10])
    finally:
        t.stop()


def reuse_pid(pid, argv):
    """Starts argv as a new process with pid `pid` (root: ns_last_pid), or
    returns None when another process took it first."""
    for _ in range(50):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
        except (IOError, OSError):
            return None
        p = subprocess.Popen(argv)
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    return None


def check_pid_reuse(interp, mode):
    """The target exits and its pid goes to a new Python process at once:
    pystitch ends instead of recording the newcomer as the old target."""
    if interp.rootfs:
        return None
    if os.geteuid() != 0 or not os.access("/proc/sys/kernel/ns_last_pid",
                                          os.W_OK):
        return None
    code = ("def impostor():\n"
            "    while True:\n"
            "        pass\n"
            "impostor()\n")
    t = Faults(interp, "spin", ["1"])
    d, out = out_path("reuse")
    imp = None
    try:
        p = subprocess.Popen([PST, "record", "-p", str(t.pid), "-f",
                              "folded", "-o", out] + mode,
                             stderr=subprocess.PIPE)
        t.proc.wait()  # reaped: the pid is free
        imp = reuse_pid(t.pid, [interp.exe, "-c", code])
        if imp is None:  # other processes took it: nothing to test
            p.kill()
            p.wait()
            return None
        try:
            _, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return "record went on with the new process of pid %d" % t.pid
        return expect_profile(p.returncode, err, out, ["spin_0"],
                              ["impostor"])
    finally:
        if imp:
            imp.kill()
            imp.wait()
        t.stop()


# ---- 4. process_vm_readv forbidden ----

def check_no_vm_readv(interp):
    if not os.access(NO_VM_READV, os.X_OK):
        return "missing %s (make check builds it)" % NO_VM_READV
    t = pytargets.Target(interp, "attribution.py", ["3"])
    problems = []
    try:
        while t.readline().strip() != "ready":
            pass
        r = pystitch(["dump", "-p", str(t.pid)], wrapper=[NO_VM_READV])
        if r.returncode == 77:
            return None
        err = r.stderr.decode(errors="replace")
        text = r.stdout.decode(errors="replace")
        if r.returncode != 0:
            problems.append("dump exit %d: %s" % (r.returncode, err))
        if err.count("process_vm_readv is not allowed") != 1 or \
                "/proc/%d/mem" % t.pid not in err:
            problems.append("dump: want the fallback said once: %r" % err)
        for k in range(3):
            m = re.search(r'Thread \d+ "worker-%d".*\n\s+(\S+)' % k, text)
            if not m or not re.match(r"work_%d_[ab]$" % k, m.group(1)):
                problems.append("dump: worker-%d's stack wrong:\n%s" % (
                    k, text))
        d, out = out_path("novm")
        r = pystitch(["record", "-p", str(t.pid), "-d", "1", "-f", "folded",
                      "--threads", "-o", out], wrapper=[NO_VM_READV])
        err = r.stderr.decode(errors="replace")
        if r.returncode != 0:
            problems.append("record exit %d: %s" % (r.returncode, err))
        elif err.count("process_vm_readv is not allowed") != 1:
            problems.append("record: want the fallback said once: %r" % err)
        else:
            seen = set()
            for stack, _ in folded(out):
                m = THREAD_ROOT.match(stack[0])
                for fr in stack[1:]:
                    fm = re.match(r"(?:.*\.)?work_(\d+)_[ab] ", fr)
                    if fm and (not m or m.group(2) != "worker-" +
                               fm.group(1)):
                        problems.append("record: %s holds %s" % (
                            stack[0], fr))
                    elif fm:
                        seen.add(fm.group(1))
            if len(seen) != 3:
                problems.append("record: workers seen %s" % sorted(seen))
        return "\n".join(problems[:10])
    finally:
        t.stop()


# ---- 6. what pystitch may do ----

# ptrace requests pystitch may make (<sys/ptrace.h>): SEIZE, INTERRUPT,
# CONT (re-injecting a signal), DETACH, GETREGS, GETREGSET. Never POKE*
# (4, 5, 6), SETREGS, nor ATTACH (its SIGSTOP outlives a killed tracer).
ALLOWED_REQUESTS = {0x4206: "SEIZE", 0x4207: "INTERRUPT", 7: "CONT",
                    17: "DETACH", 12: "GETREGS", 0x4204: "GETREGSET"}


def binaries():
    out = [PST]
    out += [p for p in glob.glob(os.path.join(BUILD, ".libs",
                                              "libpystitch.so*"))
            if not os.path.islink(p)]
    return out


def check_imports():
    """No binary imports process_vm_writev (and each does import
    process_vm_readv and ptrace: the check sees imports at all)."""
    if not shutil.which("nm"):
        return None
    problems = []
    for b in binaries():
        syms = subprocess.run(["nm", "-D", "--undefined-only", b],
                              capture_output=True).stdout.decode()
        names = set(line.split()[-1].split("@")[0]
                    for line in syms.splitlines() if line.strip())
        if "process_vm_writev" in names:
            problems.append("%s imports process_vm_writev" % b)
        for need in ("process_vm_readv", "ptrace"):
            if need not in names:
                problems.append("%s: %s not seen among its imports" % (
                    b, need))
    if len(binaries()) < 2:
        problems.append("libpystitch.so not found in %s/.libs" % BUILD)
    return "\n".join(problems)


def check_ptrace_requests():
    """Every ptrace call in the machine code passes an allowed request: the
    last `mov $N, %edi` before each call to ptrace@plt (x86_64)."""
    if os.uname()[4] != "x86_64" or not shutil.which("objdump"):
        return None
    problems = []
    for b in binaries():
        lines = subprocess.run(["objdump", "-d", "--no-show-raw-insn", b],
                               capture_output=True).stdout.decode()
        lines = lines.splitlines()
        calls = 0
        for i, line in enumerate(lines):
            if not re.search(r"call\s+\S+ <ptrace@plt>", line):
                continue
            calls += 1
            req = None
            for prev in reversed(lines[max(0, i - 16):i]):
                if "call" in prev:
                    break
                m = re.search(r"mov\s+\$0x([0-9a-f]+),%edi", prev)
                if m:
                    req = int(m.group(1), 16)
                    break
            if req not in ALLOWED_REQUESTS:
                problems.append("%s: ptrace request %s at %s" % (
                    b, req if req is not None else "not a constant",
                    line.split(":")[0].strip()))
        if calls == 0:
            problems.append("%s: no call to ptrace@plt found" % b)
    return "\n".join(problems)


def check_source_requests():
    """The source agrees: no POKE, no process_vm_writev, every ptrace()
    request an allowed constant."""
    src = os.path.join(os.environ.get("PST_SRCDIR",
                                      os.path.join(pytargets.HERE, "..",
                                                   "..")), "src")
    allowed = set("PTRACE_" + n for n in ALLOWED_REQUESTS.values())
    problems, calls = [], 0
    for path in glob.glob(os.path.join(src, "**", "*.[ch]"),
                          recursive=True):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        # The sandbox's seccomp filter names requests and calls to refuse
        # (and LeakSanitizer's PTRACE_ATTACH, in the sanitizer build) as
        # data; it calls none of them: the machine-code check sees that.
        if os.path.basename(os.path.dirname(path)) == "sandbox":
            text = re.sub(r"\bptrace\s*\(", "", text)
            text = text.replace("process_vm_writev", "").replace(
                "PTRACE_ATTACH", "")
        for word in ("PTRACE_POKE", "process_vm_writev", "PTRACE_SETREGS",
                     "PTRACE_ATTACH", "PTRACE_TRACEME"):
            if word in text:
                problems.append("%s uses %s" % (path, word))
        for m in re.finditer(r"\bptrace\s*\(\s*([^,]+),", text):
            calls += 1
            if m.group(1).strip() not in allowed:
                problems.append("%s: ptrace(%s, ...)" % (path, m.group(1)))
    if calls == 0:
        problems.append("no ptrace() call found under %s" % src)
    return "\n".join(problems)


def short_recording(args, extra_env=None, cwd=None, strace=None):
    """A 1 s recording of a spinning target."""
    t = Faults(pytargets.interpreters()[0][0], "spin")
    try:
        wrapper = []
        if strace:
            wrapper = ["strace", "-f", "-o", strace, "-e",
                       "trace=open,openat,rename,renameat,renameat2"]
        return pystitch(["record", "-p", str(t.pid), "-d", "1", "-f",
                         "folded"] + args, env=extra_env, wrapper=wrapper,
                        cwd=cwd)
    finally:
        t.stop()


def check_symlink_output():
    """A symlink at the output path is replaced, never written through,
    and the temporary file is opened O_CREAT|O_EXCL|O_NOFOLLOW then renamed
    over the output."""
    d, _ = out_path("link")
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    out = os.path.join(d, "out.folded")
    os.symlink(victim, out)
    dangling = os.path.join(d, "dangling.folded")
    os.symlink(os.path.join(d, "created-through-link"), dangling)
    problems = []
    for path in (out, dangling):
        log = os.path.join(TMP, "strace-%d" % next(SERIAL))
        use_strace = shutil.which("strace") and path == out
        # LeakSanitizer cannot run under ptrace (the ASan stage of the
        # suite runs this too): no leak check in the traced run.
        env = None
        if use_strace and os.environ.get("ASAN_OPTIONS"):
            env = {"ASAN_OPTIONS": os.environ["ASAN_OPTIONS"] +
                   ":detect_leaks=0"}
        r = short_recording(["-o", path], extra_env=env,
                            strace=log if use_strace else None)
        if r.returncode != 0:
            problems.append("exit %d: %s" % (r.returncode, r.stderr))
            continue
        # (Under strace, which stops pystitch at each system call, a loaded
        # machine may give no sample: the file is still the profile.)
        if os.path.islink(path) or not os.path.isfile(path) or \
                (not use_strace and not folded(path)):
            problems.append("%s not replaced by the profile" % path)
        if use_strace:
            with open(log) as f:
                trace = f.read()
            m = re.search(r'open(?:at)?\((?:AT_FDCWD, )?"([^"]*\.tmp)", '
                          r'([A-Z_|]+)', trace)
            if not m:
                problems.append("no temporary file opened: %s" %
                                trace[-2000:])
            else:
                flags = set(m.group(2).split("|"))
                want = {"O_CREAT", "O_EXCL", "O_NOFOLLOW"}
                if not want <= flags:
                    problems.append("temporary opened with %s" % m.group(2))
                if not re.search(r'rename(?:at2?)?\((?:AT_FDCWD, )?"%s", '
                                 r'(?:AT_FDCWD, )?"%s"' % (
                                     re.escape(m.group(1)),
                                     re.escape(path)), trace):
                    problems.append("temporary not renamed over the output")
    with open(victim) as f:
        if f.read() != "precious\n":
            problems.append("written through the symlink")
    if os.path.exists(os.path.join(d, "created-through-link")):
        problems.append("created a file through a dangling symlink")
    return "\n".join(problems)


def check_sudo_user():
    """As root with SUDO_UID/SUDO_GID set (what sudo sets), `-- command`
    runs as that user."""
    if os.geteuid() != 0:
        return None
    py = "/usr/bin/python3"
    if not os.access(py, os.X_OK):
        return None
    # Outside TMP (0700): the user must reach it.
    d = tmpdir("sudo")
    out = os.path.join(d, "profile")
    os.chmod(d, 0o777)
    idfile = os.path.join(d, "uid")
    code = ("import os, time\n"
            "open(%r, 'w').write('%%d %%d' %% (os.getuid(), os.getgid()))\n"
            "def as_user():\n"
            "    end = time.time() + 1\n"
            "    while time.time() < end:\n"
            "        pass\n"
            "as_user()\n" % idfile)
    r = pystitch(["record", "-f", "folded", "-o", out, "--", py, "-c",
                  code], env={"SUDO_UID": "65534", "SUDO_GID": "65534"},
                 cwd=d)
    problems = []
    if r.returncode != 0:
        problems.append("exit %d: %s" % (r.returncode, r.stderr))
    try:
        with open(idfile) as f:
            ids = f.read()
    except IOError:
        ids = "nothing"
    if ids != "65534 65534":
        problems.append("command ran as uid gid %s, want 65534 65534" % ids)
    if r.returncode == 0 and not names_in(out).get("as_user"):
        problems.append("as_user not recorded")
    shutil.rmtree(d, ignore_errors=True)
    return "\n".join(problems)


# ---- hostile memory: a target that corrupts its own frames and code ----

def check_scribble(interp):
    """tests/targets/scribble.py overwrites the code objects and frames of
    four sleeping threads (garbage fields, a garbage type, a frame that
    points to itself, random bytes). dump and record, in every mode, must
    end normally, count the victims' samples as errors (or, with --native,
    leave them unmerged), keep profiling the healthy thread, and leave the
    target running."""
    t = pytargets.Target(interp, "scribble.py")
    problems = []
    try:
        if t.readline(timeout=30).strip() != "ready":
            return "target did not start"
        r = pystitch(["dump", "-p", str(t.pid)], timeout=30)
        text = r.stdout.decode("utf-8", "replace")
        if r.returncode != 0 or "healthy_work" not in text:
            problems.append("dump exited %d without the healthy thread: %s"
                            % (r.returncode, text[-600:]))
        if text.count("stack unreadable") < 4:
            problems.append("dump: fewer than 4 unreadable victims:\n" +
                            text[-1500:])
        for label, mode in modes():
            d, out = out_path("scribble")
            r = pystitch(["record", "-p", str(t.pid), "-d", "1.5", "-r",
                          "200", "--idle", "-f", "folded", "-o", out] + mode)
            err = r.stderr.decode("utf-8", "replace")
            if r.returncode != 0:
                problems.append("%s: exit %d: %s" % (label, r.returncode,
                                                     err))
                continue
            names = names_in(out)
            if names.get("healthy_work", 0) < 50:
                problems.append("%s: healthy thread missing: %s" % (
                    label, sorted(names)[:20]))
            m = re.search(r"(\d+) errors \(", err)
            if label != "native" and (not m or int(m.group(1)) == 0):
                problems.append("%s: victims not counted as errors: %s" % (
                    label, err))
            bad = [n for n in names if n.startswith("victim")]
            if label != "native" and bad:
                problems.append("%s: corrupt frames written: %s" % (label,
                                                                    bad))
        line = t.readline(timeout=5)
        if not line.startswith("alive"):
            problems.append("target stopped printing: %r" % line)
        return "\n".join(problems)
    finally:
        t.stop()


def run(name, fn, *args):
    """Reports the check fn(*args), its seconds added to the name."""
    TAP.check(name, fn, *args, timed=True)


def main():
    found, _ = pytargets.interpreters()
    local = [i for i in found if not i.rootfs]
    if not local:
        report(False, "a local interpreter", "no CPython found")
        return TAP.finish()
    # The fault matrix on the last GIL build; the free-threaded ones get
    # the SIGKILL loop and the churn below.
    gil = [i for i in local if "freethreaded" not in i.label]
    interp = (gil or local)[-1]
    seed = int(os.environ.get("PST_FAULTS_SEED", int(time.time())))
    print("# interpreter %s, kill delays seeded with PST_FAULTS_SEED=%d"
          % (interp.label, seed))
    rng = random.Random(seed)
    # The checker itself: a stopped target is seen as stopped.
    t = Faults(interp, "spin")
    os.kill(t.pid, signal.SIGSTOP)
    deadline = time.time() + 5
    while not stopped_threads(t.pid, 0) and time.time() < deadline:
        time.sleep(0.01)
    report(bool(stopped_threads(t.pid, 0)), "stopped threads are seen")
    os.kill(t.pid, signal.SIGCONT)
    t.stop()
    for label, mode in modes():
        stats = {}
        run("SIGKILL x10 at 0-300 ms, %s: no thread left stopped" % label,
            kill_loop, interp, mode, 10, rng, stats)
        print("# %s: %d/%d kills survived, %d while a thread was traced"
              % (label, stats.get("survived", 0), stats.get("tried", 0),
                 stats.get("traced_at_kill", 0)))
        for sig, fmt in ((signal.SIGINT, "folded"),
                         (signal.SIGTERM, "speedscope"),
                         (signal.SIGHUP, "folded")):
            run("%s mid-sample, %s: valid %s profile" % (
                signal.Signals(sig).name, label, fmt), check_signal,
                interp, mode, sig, fmt)
        run("target exits, %s" % label, check_exits, interp, mode)
        run("target SIGKILLed, %s" % label, check_killed, interp, mode)
        run("target execs /bin/sleep, %s" % label, check_exec_other,
            interp, mode)
        run("target execs python, %s" % label, check_exec_python, interp,
            mode)
        if mode:
            run("target execs while threads are stopped at 2 kHz, %s" % label,
                check_exec_while_stopping, interp, mode)
        run("target forks, %s" % label, check_fork, interp, mode)
        run("target SIGSTOP/SIGCONT, %s" % label, check_sigstop, interp,
            mode)
        run("pid reused after the target exits, %s" % label,
            check_pid_reuse, interp, mode)
        run("500 threads/s for 10 s, %s: attribution" % label, check_churn,
            interp, mode)
    for ft in [i for i in local if "freethreaded" in i.label]:
        for label, mode in modes():
            stats = {}
            run("SIGKILL x10 at 0-300 ms, %s, %s: no thread left stopped"
                % (ft.label, label), kill_loop, ft, mode, 10, rng, stats)
            run("500 threads/s for 10 s, %s, %s: attribution" % (
                ft.label, label), check_churn, ft, mode)
    for i in {id(x): x for x in (local[0], local[-1])}.values():
        run("process_vm_readv forbidden, %s" % i.label, check_no_vm_readv,
            i)
    for i in found:
        run("target corrupts its frames and code, %s" % i.label,
            check_scribble, i)
    run("no process_vm_writev import", check_imports)
    run("ptrace requests in the binaries", check_ptrace_requests)
    run("ptrace requests in the source", check_source_requests)
    run("output symlink replaced, not followed", check_symlink_output)
    run("under sudo, -- command runs as the user", check_sudo_user)
    shutil.rmtree(TMP, ignore_errors=True)
    return TAP.finish()


if __name__ == "__main__":
    sys.exit(main())
