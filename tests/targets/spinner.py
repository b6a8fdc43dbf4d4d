# spinner.py: one process spinning in Python for the figures tests: prints
# "ready", then spins in spin() until killed (argv[1]: seconds, default
# 3600). Several of them on a 2-core machine wait for a CPU in turn.
from __future__ import print_function
import sys
import time

LIFE = float(sys.argv[1]) if len(sys.argv) > 1 else 3600


def spin():
    end = time.time() + LIFE
    while time.time() < end:
        sum(range(1000))


print("ready")
sys.stdout.flush()
spin()
