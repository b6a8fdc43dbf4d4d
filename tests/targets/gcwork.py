# gcwork.py: a thread that runs the garbage collector (gc.collect() over a
# big heap of cycles) and Python code in turn, for the <GC> frame. It keeps
# its own figures with gc.callbacks: every 50 ms it writes "SECONDS_IN_GC
# SECONDS" (since it started) to the file named by argv[1] (relative to
# this script's directory), then prints "ready" once.
import gc
import os
import sys
import threading
import time

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), sys.argv[1])
keep = []
for i in range(200000):
    a = []
    a.append(a)
    keep.append((a, {}))
gc.disable()  # collections only where collector() asks
in_gc = [0.0, None]


def timer(phase, info):
    if phase == "start":
        in_gc[1] = time.time()
    elif in_gc[1] is not None:
        in_gc[0] += time.time() - in_gc[1]
        in_gc[1] = None


gc.callbacks.append(timer)
t0 = time.time()


def collector():
    while True:
        gc.collect()
        end = time.time() + 0.03
        x = 0
        while time.time() < end:  # Python code, no collection
            x += 1


def report():
    while True:
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            f.write("%.6f %.6f\n" % (in_gc[0], time.time() - t0))
        os.rename(tmp, out)
        time.sleep(0.05)


for f in (collector, report):
    th = threading.Thread(target=f, name=f.__name__)
    th.daemon = True
    th.start()
time.sleep(0.3)
sys.stdout.write("ready\n")
sys.stdout.flush()
while True:
    time.sleep(100)
