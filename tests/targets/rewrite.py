# rewrite.py: a thread's frame memory written by another thread, for the
# test of kept stacks (test_record.py). "sleeper" sleeps in parked() and
# never runs again; on SIGUSR1 the main thread wakes "writer",
# which puts rewritten()'s code object in the place of parked()'s in the
# sleeper's frame (ctypes: the word holding the code pointer, found by
# its value) and prints "done". CPython 3.7+ with a GIL (the frame
# object's layout); the sleeper must not wake: the test ends the process.
# Prints "ready" first.
import ctypes
import signal
import sys
import threading
import time


def parked():
    while True:
        time.sleep(1000)


def rewritten():
    pass


def code_word(frame, code):
    """(address, tag bits) of the word of frame's memory holding code."""
    base = id(frame)
    if sys.version_info >= (3, 11):  # the _PyInterpreterFrame: f_frame
        base = ctypes.c_uint64.from_address(id(frame) + 24).value
    for off in range(0, 160, 8):
        v = ctypes.c_uint64.from_address(base + off).value
        if v & ~7 == id(code):
            return base + off, v & 7
    raise SystemExit("rewrite.py: no code pointer in the frame")


sleeper = threading.Thread(target=parked, name="sleeper")
sleeper.daemon = True
sleeper.start()
go = threading.Event()
kept = []


def writer():
    go.wait()
    frame = sys._current_frames()[sleeper.ident]
    addr, tag = code_word(frame, parked.__code__)
    kept.append(rewritten.__code__)  # the frame holds no reference to it
    ctypes.c_uint64.from_address(addr).value = id(rewritten.__code__) | tag
    del frame
    print("done")
    sys.stdout.flush()


w = threading.Thread(target=writer, name="writer")
w.daemon = True
w.start()
signal.signal(signal.SIGUSR1, lambda signum, frame: go.set())
time.sleep(0.3)
print("ready")
sys.stdout.flush()
while True:
    time.sleep(1000)
