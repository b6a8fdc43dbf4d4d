# callstorm.py: 4 threads calling top -> mid -> leaf as fast as they can,
# so that stacks change while pystitch reads them (the torn-read case).
# The only possible stacks are top, top;mid, top;mid;leaf. Prints "ready".
from __future__ import print_function
import sys
import threading
import time


def leaf(n):
    return n + 1


def mid(n):
    for i in range(50):
        leaf(i)


def top():
    while True:
        mid(1)


for k in range(4):
    t = threading.Thread(target=top)
    t.daemon = True
    t.start()
print("ready")
sys.stdout.flush()
time.sleep(3600)
