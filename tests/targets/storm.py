# storm.py: 6 named threads ("storm-N") recursing to changing depths as fast
# as they can, so that their stacks change while pystitch reads them (the
# torn-read case dump must still get right). Every stack is rec* <- spin
# <- threading's bootstrap frames. Prints "ready".
from __future__ import print_function
import sys
import threading
import time


def rec(n):
    if n:
        return rec(n - 1)
    return 0


def spin():
    while True:
        for depth in range(1, 60, 7):
            rec(depth)


for k in range(6):
    t = threading.Thread(target=spin, name="storm-%d" % k)
    t.daemon = True
    t.start()
print("ready")
sys.stdout.flush()
while True:
    time.sleep(3600)
