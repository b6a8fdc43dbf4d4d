# churn.py: threads created and ended continuously (each spins ~20 ms in
# short_lived, then exits), beside a long-lived thread in long_lived.
# Prints "ready"; exits after argv[1] seconds (default 3600).
from __future__ import print_function
import sys
import threading
import time

LIFE = float(sys.argv[1]) if len(sys.argv) > 1 else 3600


def short_lived():
    end = time.time() + 0.02
    while time.time() < end:
        pass


def long_lived():
    while True:
        sum(range(1000))


t = threading.Thread(target=long_lived, name="long")
t.daemon = True
t.start()
print("ready")
sys.stdout.flush()
end = time.time() + LIFE
while time.time() < end:
    w = threading.Thread(target=short_lived, name="short")
    w.start()
    w.join()
