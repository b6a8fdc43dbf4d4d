# mp.py: a parent that starts 2 multiprocessing children (fork), each
# spinning in child_work (or, with argv[2] "park", sleeping there, all at
# one line), while the parent waits in parent_wait.
# Prints "ready" once the children run; exits after argv[1] seconds.
from __future__ import print_function
import multiprocessing
import sys
import time

LIFE = float(sys.argv[1]) if len(sys.argv) > 1 else 3600
PARK = sys.argv[2:3] == ["park"]


def child_work(q):
    q.put(1)
    end = time.time() + LIFE
    if PARK:
        time.sleep(LIFE)
    while time.time() < end:
        sum(range(1000))


def parent_wait(procs):
    for p in procs:
        p.join()


if __name__ == "__main__":
    q = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=child_work, args=(q,))
             for _ in range(2)]
    for p in procs:
        p.start()
    for _ in procs:
        q.get()
    print("ready")
    sys.stdout.flush()
    parent_wait(procs)
