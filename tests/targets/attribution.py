# attribution.py: N threads (argv[1], default 6), thread k spins in its own
# functions work_k_a -> work_k_b (generated), named "worker-k". Prints
# "thread TID k" lines then "ready". Runs until killed (or argv[2] seconds).
from __future__ import print_function
import ctypes
import sys
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 6
LIFE = float(sys.argv[2]) if len(sys.argv) > 2 else 3600
libc = ctypes.CDLL(None)
lock = threading.Lock()
for k in range(N):
    exec(("def work_%d_b(n):\n"
          "    x = 0\n"
          "    for i in range(n):\n"
          "        x += i\n"
          "    return x\n"
          "def work_%d_a(started):\n"
          "    with lock:\n"
          "        print('thread %%d %d' %% libc.syscall(186))\n"
          "        sys.stdout.flush()\n"
          "    started.append(1)\n"
          "    while True:\n"
          "        work_%d_b(1000)\n") % (k, k, k, k), globals())
started = []
for k in range(N):
    t = threading.Thread(target=globals()["work_%d_a" % k], args=(started,),
                         name="worker-%d" % k)
    t.daemon = True
    t.start()
while len(started) < N:
    time.sleep(0.01)
print("ready")
sys.stdout.flush()
time.sleep(LIFE)
