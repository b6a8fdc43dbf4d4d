# server_cpu.py: what a profile of a busy server says its processes spent,
# against what the kernel counted: gunicorn (gthread, 2 workers x 4
# threads) or uvicorn (one asyncio process, --server uvicorn) under a load
# of 6 client threads on this machine's cores,
# `record -s -d SECONDS -f folded` in each mode, and the master's and
# workers' utime+stime over the same window (/proc/PID/stat). In mode cpu
# the folded counts times the period must be the CPU time; in mode wall
# they are thread-time (every thread, sleeping or not), which is why mode
# cpu is the default.
# usage: python3 bench/server_cpu.py [--seconds 5] [--rate 100]
#                                    [--interp /usr/bin/python3.11]
#                                    [--modes cpu,wall] [--rounds 2]
#                                    [--server gunicorn|uvicorn]
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "..", "tests", "targets", "wsgi_app.py")
ASGI = os.path.join(HERE, "..", "tests", "targets", "asgi_app.py")
PST = os.path.join(HERE, "..", "pystitch")
HZ = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """utime + stime of pid, in seconds (0 once it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / HZ
    except OSError:
        return 0.0


def folded_total(path):
    n = 0
    with open(path) as f:
        for line in f:
            n += int(line.rsplit(" ", 1)[1])
    return n


def one(args, mode, port, pids):
    out = "/tmp/server_cpu.%s.folded" % mode
    load = subprocess.Popen([args.interp, APP, "load", str(port),
                             str(args.seconds + 2), "6"],
                            stdout=subprocess.PIPE)
    time.sleep(0.7)
    before = sum(cpu_s(p) for p in pids)
    t0 = time.time()
    r = subprocess.run([PST, "record", "-s", "--mode", mode, "-r",
                        str(args.rate), "-d", str(args.seconds), "-f",
                        "folded", "-o", out, "-p", str(pids[0])],
                       capture_output=True, text=True)
    wall = time.time() - t0
    after = sum(cpu_s(p) for p in pids)
    served = load.communicate()[0].decode().strip()
    if r.returncode != 0:
        sys.exit("record exited %d: %s" % (r.returncode, r.stderr))
    sampled = folded_total(out) / args.rate
    return sampled, after - before, wall, served


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rate", type=float, default=100)
    ap.add_argument("--interp", default="/usr/bin/python3.11")
    ap.add_argument("--modes", default="cpu,wall")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--server", choices=("gunicorn", "uvicorn"),
                    default="gunicorn")
    args = ap.parse_args()
    if args.server == "uvicorn":
        cmd = [args.interp, "-u", ASGI, "--seconds", "600"]
    else:
        cmd = [args.interp, "-u", APP, "serve", "gthread", "--seconds", "600"]
    srv = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        port, workers, ready = None, [], False
        while not (len(workers) == 2 or ready):
            w = srv.stdout.readline().split()
            if not w:
                sys.exit("the server stopped before it served")
            if w[0] == "port":
                port = int(w[1])
            elif w[0] == "worker":
                workers.append(int(w[1]))
            elif w[0] == "ready" and args.server == "uvicorn":
                ready = True
        pids = [srv.pid] + workers
        print("%s, %d cores, %s s at %g Hz, %s" % (
            "uvicorn (asyncio, h11)" if args.server == "uvicorn"
            else "gunicorn gthread", os.cpu_count(), args.seconds, args.rate,
            args.interp))
        for rnd in range(args.rounds):
            for mode in args.modes.split(","):
                sampled, used, wall, served = one(args, mode, port, pids)
                print("round %d mode %-4s: profile %6.2f s, kernel CPU "
                      "%5.2f s (ratio %.2f) over %.1f s; load: %s" % (
                          rnd, mode, sampled, used, sampled / max(used, 1e-3),
                          wall, served))
    finally:
        srv.terminate()
        srv.wait(timeout=30)


if __name__ == "__main__":
    main()
