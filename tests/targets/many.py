# many.py: a benchmark target: N threads (argv[1], default 16), each at a
# Python stack DEPTH frames deep (argv[2], default 30); half busy, half
# sleeping. Prints "ready" when all are parked.
from __future__ import print_function
import sys
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 16
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 30
BUSY = int(sys.argv[3]) if len(sys.argv) > 3 else N // 2
started = []


def leaf(busy):
    started.append(1)
    if busy:
        n = 0
        while True:
            n += 1
    else:
        while True:
            time.sleep(3600)


def descend(depth, busy):
    if depth <= 1:
        return leaf(busy)
    return descend(depth - 1, busy)


for i in range(N):
    t = threading.Thread(target=descend, args=(DEPTH - 2, i < BUSY),
                         name="worker-%d" % i)
    t.daemon = True
    t.start()
while len(started) < N:
    time.sleep(0.01)
print("ready")
sys.stdout.flush()
while True:
    time.sleep(3600)
