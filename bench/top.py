# top.py: pystitch's CPU for `top` against `record` at the same rate on the
# same target, in alternating runs (the machine's noise hits both alike):
# the 8-thread counter target (tests/targets/counter.py, 30 frames deep).
# top prints a table every second to a pipe that is read and dropped, or
# with --screen draws its full-screen view on a pseudo-terminal (160x40)
# that is read and dropped, and is sent q when the duration is reached.
# usage: python3 bench/top.py [--rate 100] [--rounds 5] [--seconds 10]
#                             [--interp PATH] [--idle] [--screen]
import argparse
import fcntl
import os
import resource
import select
import statistics
import struct
import subprocess
import sys
import termios

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import pytargets  # noqa: E402

PST = os.path.join(HERE, "..", "pystitch")


def cpu_of(cmd):
    """CPU seconds (user + system) of one run of cmd."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + \
        (after.ru_stime - before.ru_stime)


def screen_cpu_of(cmd):
    """CPU seconds of one run of cmd on a pseudo-terminal; q is typed once
    it says its duration was reached (the view then waits for q)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    env = dict(os.environ, TERM="xterm-256color")
    p = subprocess.Popen(cmd, stdin=slave, stdout=slave,
                         stderr=subprocess.DEVNULL, env=env,
                         start_new_session=True)
    os.close(slave)
    seen, sent = b"", False
    while True:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            seen = (seen + data)[-4096:]
            if not sent and b"duration reached" in seen:
                os.write(master, b"q")
                sent = True
        elif p.poll() is not None:
            break
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = status
    os.close(master)
    if status:
        raise RuntimeError("%s: status %d" % (cmd, status))
    return ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--interp",
                    default="/root/.pyenv/versions/3.12.1/bin/python3.12")
    ap.add_argument("--idle", action="store_true")
    ap.add_argument("--screen", action="store_true",
                    help="top's full-screen view on a pseudo-terminal")
    a = ap.parse_args()
    t = pytargets.Target(pytargets.Interp("bench", a.interp), "counter.py",
                         ["8", "30"])
    extra = ["--idle"] if a.idle else []
    common = ["-p", str(t.pid), "-r", str(a.rate), "-d", str(a.seconds)]
    rec, top = [], []
    try:
        t.readline()
        for _ in range(a.rounds):
            rec.append(cpu_of([PST, "record"] + common + extra +
                              ["-f", "folded", "-o", "/tmp/pst-top.folded"]))
            cmd = [PST, "top"] + common + extra + ["--delay", "1"]
            top.append(screen_cpu_of(cmd) if a.screen else cpu_of(cmd))
    finally:
        t.stop()
    r, p = statistics.median(rec), statistics.median(top)
    print("%d rounds of %.0f s at %.0f Hz%s%s, 8-thread counter, %s" % (
        a.rounds, a.seconds, a.rate, " --idle" if a.idle else "",
        " (top full-screen)" if a.screen else "", a.interp))
    print("record: median %.3f s CPU (%.2f%% of a core)  runs %s" % (
        r, 100 * r / a.seconds, " ".join("%.3f" % x for x in rec)))
    print("top:    median %.3f s CPU (%.2f%% of a core)  runs %s" % (
        p, 100 * p / a.seconds, " ".join("%.3f" % x for x in top)))
    print("top / record: %.3f" % (p / r))


if __name__ == "__main__":
    main()
