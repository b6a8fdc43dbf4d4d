# units.py: the target of bench/slowdown.py. N worker threads (argv[1],
# default 1), each DEPTH Python frames deep (argv[2], default 30), do fixed
# units of work: UNIT inner loops of 1000 empty iterations (argv[3], default
# 50). After each unit a worker stores, in one tuple assignment (atomic
# under the GIL), the units it has done and, at that moment, its own CPU
# time (time.thread_time_ns(): CLOCK_THREAD_CPUTIME_ID, exact to the ns;
# field 1 of /proc/self/task/TID/schedstat where that is missing, before
# 3.7), CLOCK_MONOTONIC, and, with "wait" in argv[4], the time it has waited
# for a CPU (field 2 of its schedstat, read by the thread itself: exact,
# since a running thread is not waiting). Any interval between two snapshots
# then holds whole units only: CPU per unit is exact, and wall - CPU - wait
# is the time the worker was neither on a CPU nor runnable (stopped by
# ptrace, or waiting for the GIL when there are several workers).
#
# Commands, one per line on stdin (answered by the main thread, which
# otherwise sleeps in read()):
#   s        print "snap" and per worker "UNITS CPU MONO WAIT" (ns)
#   x K      from now on, every K-th unit does one more inner loop (0: none;
#            calibration: K = 1 / (f * UNIT) adds f to the average work of
#            a unit, with the same code as the rest of it)
#   q        exit
# At start it prints "ready TID1 TID2 ..." (the workers' kernel thread ids).
import os
import sys
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 30
UNIT = int(sys.argv[3]) if len(sys.argv) > 3 else 50
FLAGS = sys.argv[4] if len(sys.argv) > 4 else ""

slots = [(0, 0, 0, 0)] * N
tids = [0] * N
extra = [0]
started = threading.Semaphore(0)


def gettid():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    import ctypes
    return ctypes.CDLL(None, use_errno=True).syscall(186)  # x86_64 gettid


def spin(k):
    tid = gettid()
    tids[k] = tid
    fd = os.open("/proc/self/task/%d/schedstat" % tid, os.O_RDONLY)
    mono = getattr(time, "monotonic_ns", None) or (
        lambda: int(time.monotonic() * 1e9))
    clock = getattr(time, "thread_time_ns", None)
    if clock is None:
        def clock():
            return int(os.pread(fd, 100, 0).split()[0])
    if "wait" in FLAGS:
        def wait():
            return int(os.pread(fd, 100, 0).split()[1])
    else:
        def wait():
            return 0
    s, x, n, j = slots, extra, 0, 0
    s[k] = (0, clock(), mono(), wait())
    started.release()
    while True:
        for _ in range(UNIT):
            for _ in range(1000):
                pass
        e = x[0]
        if e:
            j += 1
            if j >= e:
                j = 0
                for _ in range(1000):
                    pass
        n += 1
        s[k] = (n, clock(), mono(), wait())


def descend(depth, k):
    if depth <= 1:
        return spin(k)
    return descend(depth - 1, k)


for k in range(N):
    t = threading.Thread(target=descend, args=(DEPTH - 2, k),
                         name="work-%d" % k)
    t.daemon = True
    t.start()
for k in range(N):
    started.acquire()
out = sys.stdout
out.write("ready %s\n" % " ".join(str(t) for t in tids))
out.flush()
while True:
    cmd = sys.stdin.readline().split()
    if not cmd or cmd[0] == "q":
        break
    if cmd[0] == "s":
        snap = list(slots)
        out.write("snap %s\n" % " ".join("%d %d %d %d" % u for u in snap))
    elif cmd[0] == "x":
        extra[0] = int(cmd[1])
        out.write("ok\n")
    out.flush()
