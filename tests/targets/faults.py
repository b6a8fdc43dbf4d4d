# faults.py: the target of the fault tests (tests/integration/test_faults.py,
# bench/faults.py). usage: faults.py MODE COUNTER_FILE [ARGS...]
#
# Every mode but churn starts 4 spinning threads (spin_k, named "spin-k") and 2
# sleeping ones, then writes "main spin0 spin1 spin2 spin3" progress
# counters to COUNTER_FILE every 10 ms (the main thread's loop count and each
# spinner's), prints "ready" and then:
#   spin [SECONDS]          runs (until killed, or SECONDS)
#   exec DELAY PROG ARGS... after DELAY seconds os.execv(PROG, [PROG]+ARGS)
#   fork SECONDS            forks a child that spins in child_only for
#                           SECONDS, prints "child PID"; the parent spins on
#   churn RATE SECONDS LOG  creates RATE threads per second (each lives
#                           50 ms) for SECONDS, then
#                           exits; thread k is named "cK" (K = k % 50) and
#                           runs only f_cK; LOG gets "TID K" per thread and a
#                           last line "churned N"
from __future__ import print_function
import ctypes
import os
import sys
import threading
import time

MODE = sys.argv[1]
COUNTER = sys.argv[2]
ARGS = sys.argv[3:]
counts = [0] * 4
libc = ctypes.CDLL(None)
SYS_gettid = {"x86_64": 186, "aarch64": 178}.get(os.uname()[4], 186)


def spin(k):
    c = counts
    while True:
        for _ in range(200):
            pass
        c[k] += 1


def sleeper():
    while True:
        time.sleep(0.05)


# Each spinner has its own function so that stacks say which thread it is.
# (Not with churn: spinners would hold the GIL that starting threads need.)
for k in range(4 if MODE != "churn" else 0):
    exec(("def spin_%d():\n"
          "    spin(%d)\n") % (k, k), globals())
    t = threading.Thread(target=globals()["spin_%d" % k], name="spin-%d" % k)
    t.daemon = True
    t.start()
for k in range(2):
    t = threading.Thread(target=sleeper, name="sleeper-%d" % k)
    t.daemon = True
    t.start()

main_count = [0]


def write_counters():
    data = ("%d %s\n" % (main_count[0], " ".join(str(c) for c in counts)))
    tmp = COUNTER + ".tmp"
    with open(tmp, "w") as f:
        f.write(data)
    os.rename(tmp, COUNTER)


def progress_for(seconds):
    end = time.time() + seconds
    while time.time() < end:
        main_count[0] += 1
        write_counters()
        time.sleep(0.01)


# ---- churn: short-lived threads, each named after its one function ----
NAMES = 50
churn_log = []
churn_lock = threading.Lock()


def churn_body(k):
    with churn_lock:
        churn_log.append("%d %d" % (libc.syscall(SYS_gettid), k))
    # Sleeps (GIL released), so that starting the next threads is not
    # slowed down by GIL hand-offs: recorded with --idle.
    time.sleep(0.05)


for k in range(NAMES):
    exec(("def f_c%d():\n"
          "    churn_body(%d)\n") % (k, k), globals())


def churn(rate, seconds, log):
    n = 0
    start = time.time()
    end = start + seconds
    alive = []
    while time.time() < end:
        # Keep to the rate: start the threads due by now.
        due = int((time.time() - start) * rate)
        while n < due and time.time() < end:
            k = n % NAMES
            t = threading.Thread(target=globals()["f_c%d" % k],
                                 name="c%d" % k)
            t.daemon = True
            t.start()
            alive.append(t)
            n += 1
        alive = [t for t in alive if t.is_alive()]
        main_count[0] += 1
        write_counters()
        time.sleep(0.002)
    for t in alive:
        t.join()
    with open(log, "w") as f:
        f.write("\n".join(churn_log) + "\nchurned %d\n" % n)


def child_only(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass
    os._exit(0)


write_counters()
print("ready")
sys.stdout.flush()
if MODE == "spin":
    progress_for(float(ARGS[0]) if ARGS else 1e9)
elif MODE == "exec":
    progress_for(float(ARGS[0]))
    os.execv(ARGS[1], [ARGS[1]] + ARGS[2:])
elif MODE == "fork":
    pid = os.fork()
    if pid == 0:
        child_only(float(ARGS[0]))
    print("child %d" % pid)
    sys.stdout.flush()
    progress_for(1e9)
elif MODE == "churn":
    churn(float(ARGS[0]), float(ARGS[1]), ARGS[2])
else:
    sys.exit("faults.py: unknown mode " + MODE)
