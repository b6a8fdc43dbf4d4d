# sleeper.py: threads that sleep in time.sleep (a main thread and a named
# one), for the figures tests: prints "ready", then sleeps.
from __future__ import print_function
import sys
import threading
import time

t = threading.Thread(target=time.sleep, args=(100000,), name="sleeper")
t.daemon = True
t.start()
print("ready")
sys.stdout.flush()
time.sleep(100000)
