# proportions.py: one thread spends about 60%, 30% and 10% of its time in
# heavy, medium and light (busy loops of 6:3:1 iterations on average), and
# measures the real shares itself: every 0.5 s it prints "totals H M L",
# the seconds spent in each so far. Prints "ready" first; runs until
# killed. Each loop's length varies at random (0.5-1.5x): with fixed
# lengths the cycle (2.5 ms on 3.13t) and a sampling period (4 ms at 250
# Hz) fall into step, and the samples see a few phases of it only.
from __future__ import print_function
import random
import sys
import threading
import time

try:
    loop = xrange  # 2.7: no list
except NameError:
    loop = range

totals = [0.0, 0.0, 0.0]
clock = getattr(time, "perf_counter", time.time)


def spin(n):
    x = 0
    for i in loop(int(n * random.uniform(0.5, 1.5))):
        x += i
    return x


def heavy():
    return spin(60000)


def medium():
    return spin(30000)


def light():
    return spin(10000)


def reporter():
    while True:
        time.sleep(0.5)
        print("totals %.6f %.6f %.6f" % tuple(totals))
        sys.stdout.flush()


t = threading.Thread(target=reporter)
t.daemon = True
t.start()
print("ready")
sys.stdout.flush()
while True:
    for k, f in enumerate((heavy, medium, light)):
        t0 = clock()
        f()
        totals[k] += clock() - t0
