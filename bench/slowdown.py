# slowdown.py: what `pystitch record` takes from its target, as the
# target's own CPU time per unit of work with and without the profiler
# (issue 9, item 5), with 95% confidence intervals, plus the profiler's own
# CPU. Method and figures: docs/performance.md, "Target slowdown".
#
#   - Target: bench/targets/units.py, N worker threads (1, and 8 sharing
#     the GIL) doing fixed units of work; after each unit a worker stores
#     (units, its CPU ns, monotonic ns, its run-queue wait ns), so the CPU
#     per unit of an interval is exact and the time it waited for a CPU
#     (the scheduling noise of a shared machine) is not in it. CPU of the
#     target's other threads (main) is added from /proc/PID/task/*/schedstat.
#   - Gauge: a second, unprofiled units.py (one worker) pinned to the same
#     CPU as the target, with a short scheduler slice for both (sched_setattr
#     sched_runtime, EEVDF, Linux >= 6.12) so that they take turns every
#     0.2 ms. On this VM the host changes how fast a vCPU runs by up to 2x
#     from one second to the next (other guests; no PMU to count cycles);
#     the gauge sees the same vCPU at the same moments, so the target's CPU
#     per unit divided by the gauge's cancels that. Both raw and normalised
#     figures are printed.
#   - One target (and gauge) process for all modes; per mode one pystitch
#     records the whole time and is SIGSTOPped in every other window, never
#     while it holds a thread of the target (the pause is retried until no
#     target thread is traced). Windows go on/off, off/on, ... (ABBA), so a
#     linear drift cancels; each pair gives (on/off - 1) of the normalised
#     CPU per unit. Printed: the mean over pairs with a 95% interval by
#     batch means (Student t over the means of --batch consecutive pairs:
#     neighbouring pairs share slow noise, and repeated runs scatter more
#     than the plain pair interval says), the plain pair t and bootstrap
#     intervals, and a 20%-trimmed mean (bootstrap interval).
#   - Controls, no profiler: "aa" labels identical windows on and off (the
#     interval should contain 0), "calib" makes the target add --calib (1%)
#     more work to every unit in its 'on' windows (the interval should
#     contain about 1% and exclude 0).
#   - pystitch's CPU share over the on windows (schedstat run time of all
#     its threads / wall; utime+stime from /proc/PID/stat alongside), its
#     CPU per thread-sample, and for the 1-worker target the time the worker
#     was stopped (neither on a CPU nor runnable: ptrace stops) per unit.
#
# usage (as root, after a build):
#   python3 bench/slowdown.py [--threads 1,8] [--pairs 60] [--window 0.5]
#       [--modes aa,calib,100,1000,100n,1000n] [--calib 0.01] [--cpu N]
#       [--slice 0.2] [--interp PATH] [--log FILE.json] [-v]
# A mode is a rate in Hz, with "n" for --native; "aa" and "calib" are the
# controls.
import argparse
import ctypes
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PST = os.path.join(HERE, "..", "pystitch")
TARGET = os.path.join(HERE, "targets", "units.py")
DEFAULT_INTERP = "/root/.pyenv/versions/3.12.1/bin/python3.12"


# ---- statistics (standard library only) ----

def t_quantile(p, df):
    """Quantile p (> 0.5) of Student's t with df degrees of freedom, by
    bisection on its CDF (Simpson integration of the density)."""
    c = math.exp(math.lgamma((df + 1) / 2.0) - math.lgamma(df / 2.0)) / \
        math.sqrt(df * math.pi)

    def cdf(x):
        n = 2000
        h = x / n
        s = 1.0 + (1 + x * x / df) ** (-(df + 1) / 2.0)
        for i in range(1, n):
            s += (4 if i % 2 else 2) * \
                (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2.0)
        return 0.5 + c * s * h / 3.0

    lo, hi = 0.0, 1000.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if cdf(mid) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def mean_ci(xs, boot=10000, seed=1):
    """(mean, t-interval lo, hi, bootstrap lo, hi, sd) of xs, 95%."""
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, m, m, m, m, 0.0
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(xs) for _ in range(n)) / n
                   for _ in range(boot))
    return (m, m - h, m + h, means[int(0.025 * boot)],
            means[int(0.975 * boot) - 1], sd)


def batch_ci(xs, size):
    """(mean, lo, hi): Student-t 95% interval over the means of
    consecutive batches of `size` pairs (batch means): honest when the
    noise of neighbouring pairs is correlated, which the pair interval
    assumes it is not."""
    bm = [sum(xs[i:i + size]) / size
          for i in range(0, len(xs) - size + 1, size)]
    if len(bm) < 5:  # too few batches: the pair interval
        bm = xs
    m, lo, hi = mean_ci(bm, boot=1)[:3]
    return sum(xs) / len(xs), lo, hi


def trimmed_ci(xs, frac=0.2, boot=10000, seed=2):
    """(trimmed mean, bootstrap 95% lo, hi): the mean of the middle
    1 - 2*frac of xs, robust to the odd window a burst of other work hit."""
    def tm(v):
        v = sorted(v)
        k = int(len(v) * frac)
        v = v[k:len(v) - k] or v
        return sum(v) / len(v)
    rng = random.Random(seed)
    n = len(xs)
    ms = sorted(tm([rng.choice(xs) for _ in range(n)]) for _ in range(boot))
    return tm(xs), ms[int(0.025 * boot)], ms[int(0.975 * boot) - 1]


# ---- /proc and the scheduler ----

def tasks(pid):
    try:
        return [int(t) for t in os.listdir("/proc/%d/task" % pid)]
    except OSError:
        return []


def run_ns(pid, tid):
    """ns on a CPU of one task (schedstat field 1), 0 if gone."""
    try:
        with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def cpu_ns(pid):
    """ns on a CPU of all threads of pid (sum_exec_runtime, what
    /proc/PID/stat's utime+stime round to clock ticks)."""
    return sum(run_ns(pid, tid) for tid in tasks(pid))


def stat_cpu_ns(pid):
    """utime + stime of pid from /proc/PID/stat, in ns (tick resolution)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1e9 / os.sysconf(
        "SC_CLK_TCK")


def traced(pid):
    """Threads of pid in a tracing stop or attached by a tracer."""
    n = 0
    for tid in tasks(pid):
        try:
            with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
                st = f.read()
        except OSError:
            continue
        state = re.search(r"^State:\s+(\S)", st, re.M)
        tracer = re.search(r"^TracerPid:\s+(\d+)", st, re.M)
        if (state and state.group(1) == "t") or \
                (tracer and tracer.group(1) != "0"):
            n += 1
    return n


_libc = ctypes.CDLL(None, use_errno=True)


def set_slice(tid, ns):
    """The EEVDF slice of a SCHED_OTHER task (sched_attr.sched_runtime,
    Linux >= 6.12; older kernels ignore it). x86_64 only; False if not
    applied."""
    if platform.machine() != "x86_64":
        return False
    # struct sched_attr, SCHED_ATTR_SIZE_VER1 (56 bytes).
    buf = ctypes.create_string_buffer(
        struct.pack("IIQiIQQQII", 56, 0, 0, 0, 0, ns, 0, 0, 0, 0), 56)
    return _libc.syscall(314, tid, buf, 0) == 0  # SYS_sched_setattr


# ---- target and gauge ----

class Target(object):
    def __init__(self, interp, nthreads, depth, unit, cpus=None):
        def pin():
            if cpus:
                os.sched_setaffinity(0, cpus)  # inherited by its threads
        self.p = subprocess.Popen(
            [interp, "-u", TARGET, str(nthreads), str(depth), str(unit),
             "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, preexec_fn=pin)
        self.pid = self.p.pid
        line = self.p.stdout.readline().split()
        if not line or line[0] != b"ready":
            raise RuntimeError("target did not start: %r" % line)
        self.workers = [int(t) for t in line[1:]]
        self.nthreads = nthreads

    def send(self, text):
        self.p.stdin.write(text.encode() + b"\n")
        self.p.stdin.flush()

    def answer(self):
        return self.p.stdout.readline().decode().split()

    def request_snapshot(self):
        self.send("s")

    def read_snapshot(self):
        """Per worker (units, CPU, monotonic, wait ns) at its last unit
        end, and the run time of the other threads."""
        parts = self.answer()
        assert parts and parts[0] == "snap", parts
        vals = [int(v) for v in parts[1:]]
        others = sum(run_ns(self.pid, t) for t in tasks(self.pid)
                     if t not in self.workers)
        return {"w": [vals[i:i + 4] for i in range(0, len(vals), 4)],
                "others": others, "t": time.monotonic_ns()}

    def inject(self, every):
        self.send("x %d" % every)
        assert self.answer() == ["ok"]

    def stop(self):
        try:
            self.send("q")
            self.p.stdin.close()
            self.p.wait(timeout=2)
        except Exception:
            self.p.kill()
            self.p.wait()


def snapshot(*procs):
    """Snapshots of several targets, asked for at once."""
    for p in procs:
        p.request_snapshot()
    return [p.read_snapshot() for p in procs]


def window_stats(a, b):
    """CPU per unit and friends between snapshots a and b of one target."""
    units = sum(y[0] - x[0] for x, y in zip(a["w"], b["w"]))
    wcpu = sum(y[1] - x[1] for x, y in zip(a["w"], b["w"]))
    # Worker time neither on a CPU nor waiting for one: ptrace stops (and,
    # with several workers, waits for the GIL).
    stopped = sum((y[2] - x[2]) - (y[1] - x[1]) - (y[3] - x[3])
                  for x, y in zip(a["w"], b["w"]))
    other = b["others"] - a["others"]
    u = max(units, 1)
    return {"units": units, "cpu_unit": (wcpu + other) / u,
            "other_cpu_unit": other / u, "stopped_unit": stopped / u,
            "wall": (b["t"] - a["t"]) / 1e9}


# ---- profiler ----

class Profiler(object):
    def __init__(self, pid, rate, native, idle, tmp):
        # Not -o /dev/null: pystitch writes a temporary file and renames
        # it over the output path.
        self.out = os.path.join(tmp, "out.folded")
        self.errpath = os.path.join(tmp, "stderr.txt")
        self.err = open(self.errpath, "wb")
        argv = [PST, "record", "-p", str(pid), "-r", "%g" % rate, "-d",
                "36000", "-f", "folded", "-o", self.out]
        if idle:
            argv.append("--idle")
        if native:
            argv.append("--native")
        self.target = pid
        self.p = subprocess.Popen(argv, stderr=self.err)
        self.pid = self.p.pid
        self.paused_s = 0.0
        self.paused_at = None
        self.pauses = 0
        self.pause_tries = 0

    def pause(self):
        """SIGSTOP, never while the profiler holds a thread of the target
        (it would stay stopped for the whole window): if one is traced
        once the stop took effect, resume and try again a moment later."""
        for i in range(5000):
            os.kill(self.pid, signal.SIGSTOP)
            for _ in range(200):
                with open("/proc/%d/stat" % self.pid) as f:
                    if f.read().rpartition(")")[2].split()[0] == "T":
                        break
                time.sleep(0.0002)
            if not traced(self.target):
                self.paused_at = time.monotonic()
                self.pauses += 1
                self.pause_tries += i + 1
                return
            os.kill(self.pid, signal.SIGCONT)
            time.sleep(0.0001 * random.randint(1, 20))
        raise RuntimeError("could not pause the profiler between samples")

    def resume(self):
        os.kill(self.pid, signal.SIGCONT)
        if self.paused_at is not None:
            self.paused_s += time.monotonic() - self.paused_at
            self.paused_at = None

    def finish(self):
        if self.paused_at is not None:
            self.resume()
        self.p.send_signal(signal.SIGINT)
        self.p.wait()
        self.err.close()
        with open(self.errpath, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        m = re.search(r"wrote .*?: (\d+) samples .* over ([\d.]+) s", err)
        e = re.search(r"(\d+) errors", err)
        if not m:
            raise RuntimeError("pystitch failed: %s" % err)
        return {"samples": int(m.group(1)), "elapsed": float(m.group(2)),
                "errors": int(e.group(1)) if e else -1, "stderr": err}


# ---- one mode ----

def pair_values(p):
    """What one pair of windows says, in percent."""
    on, off = p["on"], p["off"]
    return {"raw": 100.0 * (on["cpu_unit"] / off["cpu_unit"] - 1),
            "norm": 100.0 * ((on["cpu_unit"] / on["gauge_unit"]) /
                             (off["cpu_unit"] / off["gauge_unit"]) - 1),
            "stopped": 100.0 * (on["stopped_unit"] - off["stopped_unit"]) /
            off["cpu_unit"]}


def run_mode(t, g, mode, a, tmp, log):
    """Pairs of windows of one mode on target t with gauge g."""
    prof = None
    if mode == "aa":
        on = off = (lambda: None)
    elif mode == "calib":
        # A unit is UNIT inner loops: one more every K-th unit.
        every = int(round(1.0 / (a.calib * a.unit)))
        if every < 1 or abs(1.0 / (every * a.unit) - a.calib) > 1e-9:
            raise SystemExit("--calib must be 1/(K * --unit) for an integer "
                             "K (e.g. 0.01 or 0.02 with --unit 50)")
        on, off = (lambda: t.inject(every)), (lambda: t.inject(0))
    else:
        prof = Profiler(t.pid, float(mode.rstrip("n")), mode.endswith("n"),
                        not a.no_idle, tmp)
        time.sleep(a.settle)  # attach, first refresh
        on, off = prof.resume, prof.pause
    off()
    pairs = []
    prof_on_ns = prof_off_ns = stat_on_ns = on_wall = off_wall = 0.0
    target_on_ns = 0.0
    fin = None
    try:
        for k in range(a.pairs):
            order = ("on", "off") if k % 2 == 0 else ("off", "on")
            res = {}
            for state in order:
                (on if state == "on" else off)()
                time.sleep(a.guard)
                if prof:
                    p0, s0 = cpu_ns(prof.pid), stat_cpu_ns(prof.pid)
                t_a, g_a = snapshot(t, g)
                time.sleep(a.window)
                t_b, g_b = snapshot(t, g)
                w = window_stats(t_a, t_b)
                wg = window_stats(g_a, g_b)
                w["gauge_unit"] = wg["cpu_unit"]
                w["gauge_units"] = wg["units"]
                if prof:
                    dp = cpu_ns(prof.pid) - p0
                    if state == "on":
                        prof_on_ns += dp
                        target_on_ns += w["cpu_unit"] * w["units"]
                        stat_on_ns += stat_cpu_ns(prof.pid) - s0
                        on_wall += w["wall"]
                    else:
                        prof_off_ns += dp
                        off_wall += w["wall"]
                    w["prof_cpu_share"] = dp / 1e9 / w["wall"]
                res[state] = w
            pairs.append(res)
            if log is not None:
                log.append({"threads": t.nthreads, "mode": mode, "pair": k,
                            "order": order, "on": res["on"],
                            "off": res["off"]})
            if a.verbose:
                v = pair_values(res)
                print("    pair %2d: target on %.0f off %.0f us/unit "
                      "(%d, %d units), gauge on %.0f off %.0f: raw %+.2f%%, "
                      "normalised %+.2f%%, stopped %+.2f%%" % (
                          k, res["on"]["cpu_unit"] / 1e3,
                          res["off"]["cpu_unit"] / 1e3, res["on"]["units"],
                          res["off"]["units"], res["on"]["gauge_unit"] / 1e3,
                          res["off"]["gauge_unit"] / 1e3, v["raw"],
                          v["norm"], v["stopped"]))
                sys.stdout.flush()
    finally:
        if mode == "calib":
            t.inject(0)
        if prof:
            fin = prof.finish()
    out = {"mode": mode, "n": len(pairs)}
    vals = [pair_values(p) for p in pairs]
    for key in ("raw", "norm", "stopped"):
        xs = [v[key] for v in vals]
        out[key] = mean_ci(xs)
        out[key + "_batch"] = batch_ci(xs, a.batch)
        out[key + "_trim"] = trimmed_ci(xs)
    out["cpu_unit_off"] = sum(p["off"]["cpu_unit"] for p in pairs) / len(
        pairs)
    if prof:
        # Samples are taken only while pystitch runs: spread them evenly
        # over its running time to get those of the on windows.
        running = fin["elapsed"] - prof.paused_s
        samples_on = fin["samples"] * on_wall / max(running, 1e-9)
        out.update({
            "prof_share": prof_on_ns / 1e9 / on_wall,
            "prof_share_stat": stat_on_ns / 1e9 / on_wall,
            "prof_off_share": prof_off_ns / 1e9 / max(off_wall, 1e-9),
            "us_per_sample": prof_on_ns / 1e3 / max(samples_on, 1),
            "samples": fin["samples"], "errors": fin["errors"],
            # What the normalised slowdown is in target CPU per
            # thread-sample: d/(1+d) of the target's CPU in the on windows.
            "target_us_per_sample": [
                x / (100.0 + x) * target_on_ns / 1e3 / max(samples_on, 1)
                for x in out["norm_batch"]],
            "pause_tries": prof.pause_tries / max(prof.pauses, 1)})
    return out


def fmt_ci(r, key):
    m, lo, hi, blo, bhi, sd = r[key]
    _, b_lo, b_hi = r[key + "_batch"]
    return "%+.2f%% [%+.2f, %+.2f] (pairs: t [%+.2f, %+.2f], bootstrap " \
        "[%+.2f, %+.2f]; pair sd %.2f)" % (m, b_lo, b_hi, lo, hi, blo, bhi,
                                           sd)


def label(mode, a):
    if mode == "aa":
        return "A/A control"
    if mode == "calib":
        return "calibration, +%g%% work injected" % (100 * a.calib)
    return "%s Hz%s" % (mode.rstrip("n"), " --native" if
                        mode.endswith("n") else "")


def report(r, a):
    ind = " " * 6
    lines = ["  %s (%d pairs; load average %s at the end):" % (
                 label(r["mode"], a), r["n"], r["load"]),
             ind + "CPU per unit, normalised: " + fmt_ci(r, "norm"),
             ind + "  trimmed %+.2f%% [%+.2f, %+.2f]; " % r["norm_trim"] +
             "raw %+.2f%% [%+.2f, %+.2f]" % r["raw_batch"]]
    if r["threads"] == 1:
        lines.append(ind + "stopped per unit (%% of CPU per unit): "
                     "%+.2f%% [%+.2f, %+.2f]" % r["stopped_batch"])
    if "prof_share" in r:
        lines.append(ind + "pystitch %.2f%% of a CPU (utime+stime %.2f%%), "
                     "%.1f us per thread-sample; %d samples, %d errors, "
                     "%.1f tries per pause" % (
                         100 * r["prof_share"], 100 * r["prof_share_stat"],
                         r["us_per_sample"], r["samples"], r["errors"],
                         r["pause_tries"]))
        lines.append(ind + "target CPU per thread-sample: %+.1f us "
                     "[%+.1f, %+.1f]" % tuple(r["target_us_per_sample"]))
        if r["prof_off_share"] > 0.001:
            lines.append(ind + "WARNING: pystitch used %.2f%% of a CPU "
                         "while paused" % (100 * r["prof_off_share"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,8",
                    help="worker counts of the targets (comma list)")
    ap.add_argument("--modes", default="aa,calib,100,1000,100n,1000n")
    ap.add_argument("--pairs", type=int, default=60)
    ap.add_argument("--batch", type=int, default=4,
                    help="pairs per batch of the quoted interval")
    ap.add_argument("--window", type=float, default=0.5,
                    help="seconds per window")
    ap.add_argument("--guard", type=float, default=0.1,
                    help="seconds after each switch before a window")
    ap.add_argument("--settle", type=float, default=1.0,
                    help="seconds after a profiler starts")
    ap.add_argument("--calib", type=float, default=0.01,
                    help="fraction of work the calibration mode injects")
    ap.add_argument("--depth", type=int, default=30)
    ap.add_argument("--unit", type=int, default=50,
                    help="inner loops of 1000 iterations per unit")
    ap.add_argument("--cpu", default="0",
                    help="CPU(s) the target and the gauge are pinned to "
                    "(comma list; 'none': not pinned)")
    ap.add_argument("--slice", type=float, default=0.2,
                    help="scheduler slice in ms of the target's workers and "
                    "the gauge (0: the kernel's)")
    ap.add_argument("--no-idle", action="store_true",
                    help="record without --idle")
    ap.add_argument("--interp", default=DEFAULT_INTERP)
    ap.add_argument("--log", help="write every window to this JSON file")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()

    cpus = None if a.cpu == "none" else {int(c) for c in a.cpu.split(",")}
    log = [] if a.log else None
    tmp = tempfile.mkdtemp(prefix="pst-slowdown-")
    results = []
    with open("/proc/loadavg") as f:
        load0 = f.read().split()[:3]
    print("pystitch slowdown, %s, %s: %d pairs of %.2f s windows (guard "
          "%.2f s) per mode; target and gauge on CPU %s, slice %g ms; load "
          "average %s" % (time.strftime("%Y-%m-%d %H:%M"), a.interp,
                          a.pairs, a.window, a.guard, a.cpu, a.slice,
                          " ".join(load0)))
    sys.stdout.flush()
    try:
        for n in [int(x) for x in a.threads.split(",")]:
            t = Target(a.interp, n, a.depth, a.unit, cpus)
            g = Target(a.interp, 1, a.depth, a.unit, cpus)
            try:
                if a.slice > 0:
                    ok = all([set_slice(tid, int(a.slice * 1e6))
                              for tid in t.workers + g.workers])
                    if not ok:
                        print("warning: could not set the scheduler slice")
                t0, g0 = snapshot(t, g)
                time.sleep(2)  # warm up
                t1, g1 = snapshot(t, g)
                w, wg = window_stats(t0, t1), window_stats(g0, g1)
                print("target: %d worker thread%s, %d frames, %.0f us CPU "
                      "per unit (gauge %.0f us)" % (
                          n, "" if n == 1 else "s", a.depth,
                          w["cpu_unit"] / 1e3, wg["cpu_unit"] / 1e3))
                sys.stdout.flush()
                for mode in a.modes.split(","):
                    r = run_mode(t, g, mode, a, tmp, log)
                    r["threads"] = n
                    with open("/proc/loadavg") as f:
                        r["load"] = f.read().split()[0]
                    results.append(r)
                    print(report(r, a))
                    sys.stdout.flush()
            finally:
                t.stop()
                g.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        with open("/proc/loadavg") as f:
            load1 = f.read().split()[:3]
        print("load average at the end: %s; %s" % (
            " ".join(load1), time.strftime("%Y-%m-%d %H:%M")))
        if a.log:
            with open(a.log, "w") as f:
                json.dump({"args": vars(a), "load": [load0, load1],
                           "windows": log, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
