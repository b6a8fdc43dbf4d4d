# counter.py: N CPU-bound threads (argv[1], default 8), each DEPTH frames
# deep (argv[2], default 30), counting loop iterations; every INTERVAL
# seconds (argv[3], default 1) the main thread prints the total iterations
# done so far and its clock: "count N T".
from __future__ import print_function
import sys
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 8
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 30
INTERVAL = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
counts = [0] * N


def spin(k):
    c = counts
    while True:
        for _ in range(1000):
            pass
        c[k] += 1


def descend(depth, k):
    if depth <= 1:
        return spin(k)
    return descend(depth - 1, k)


for k in range(N):
    t = threading.Thread(target=descend, args=(DEPTH - 2, k),
                         name="spin-%d" % k)
    t.daemon = True
    t.start()
print("ready")
sys.stdout.flush()
while True:
    time.sleep(INTERVAL)
    print("count %d %.6f" % (sum(counts), time.time()))
    sys.stdout.flush()
