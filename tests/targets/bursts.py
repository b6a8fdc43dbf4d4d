# bursts.py: many sleeping threads and a few that wake now and then for a
# short burst of CPU, for the gate of mode cpu (test_figures.py): most
# threads never run, the bursts' CPU time must still all be counted.
# Runs on CPython 2.7 and 3.x.
# usage: python3 bursts.py [SLEEPERS (default 300)] [BURSTERS (default 3)]
# Prints "ready" when every thread has started.
from __future__ import print_function
import random
import sys
import threading
import time

SLEEPERS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
BURSTERS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
started = []
never = threading.Event()


def burst_work(seconds):
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        n += 1
    return n


def burster(seed):
    rnd = random.Random(seed)
    started.append(1)
    while True:
        time.sleep(rnd.uniform(0.02, 0.08))
        burst_work(rnd.uniform(0.005, 0.015))


def sleeper():
    started.append(1)
    never.wait()


for i in range(SLEEPERS):
    threading.Thread(target=sleeper).start()
for i in range(BURSTERS):
    threading.Thread(target=burster, args=(i,)).start()
while len(started) < SLEEPERS + BURSTERS:
    time.sleep(0.01)
print("ready")
sys.stdout.flush()
never.wait(600) if sys.version_info[0] > 2 else time.sleep(600)
