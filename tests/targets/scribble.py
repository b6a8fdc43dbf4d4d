# scribble.py: a target that corrupts its own frames and code objects
# (through ctypes), for the hostile-memory test. Threads victim0..3 block
# forever in time.sleep inside their own function; then the main thread
# overwrites, for each victim: 0 its code object's fields (type kept), 1 its
# code object including the type, 2 its frame with its own address (a
# cycle), 3 its frame with random bytes. Thread "healthy" spins in
# healthy_work and must still be profiled. gc is off and the process leaves
# with os._exit: nothing in the interpreter touches the corrupted objects
# again. Prints "ready" once corrupted, then "alive N" every 0.2 s.
from __future__ import print_function
import ctypes
import gc
import os
import struct
import sys
import sysconfig
import threading
import time

gc.disable()
PTR = ctypes.sizeof(ctypes.c_void_p)
# ob_refcnt, ob_type; a free-threaded build has ob_tid, the flags and local
# refcount, and the shared refcount before ob_type.
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
HEAD = (4 if FREE_THREADED else 2) * PTR


def victim0():
    time.sleep(3600)


def victim1():
    time.sleep(3600)


def victim2():
    time.sleep(3600)


def victim3():
    time.sleep(3600)


def healthy_work():
    x = 0
    while True:
        for i in range(1000):
            x += i


def interp_frame(frame):
    """Address of the frame pystitch walks: the frame object up to 3.10,
    else the _PyInterpreterFrame its f_frame (after f_back) points to."""
    if sys.version_info < (3, 11):
        return id(frame)
    return ctypes.c_void_p.from_address(id(frame) + HEAD + PTR).value


def scribble(addr, data):
    ctypes.memmove(addr, data, len(data))


victims = [victim0, victim1, victim2, victim3]
threads = []
for k, fn in enumerate(victims):
    t = threading.Thread(target=fn, name="victim%d" % k)
    t.daemon = True
    t.start()
    threads.append(t)
h = threading.Thread(target=healthy_work, name="healthy")
h.daemon = True
h.start()
time.sleep(0.3)  # every victim is asleep in its function
frames = sys._current_frames()
ident = dict((t.ident, k) for k, t in enumerate(threads))
for tid, frame in frames.items():
    k = ident.get(tid)
    if k is None:
        continue
    while frame is not None and frame.f_code is not victims[k].__code__:
        frame = frame.f_back
    if frame is None:
        continue
    code = victims[k].__code__
    size = sys.getsizeof(code)
    if k == 0:
        scribble(id(code) + HEAD, os.urandom(size - HEAD))
    elif k == 1:
        scribble(id(code) + PTR, os.urandom(size - PTR))
    elif k == 2:
        addr = interp_frame(frame)
        scribble(addr, struct.pack("P", addr) * 8)
    else:
        scribble(interp_frame(frame), os.urandom(8 * PTR))
del frames, frame
print("ready")
sys.stdout.flush()
n = 0
while n < 3000:
    time.sleep(0.2)
    n += 1
    print("alive %d" % n)
    sys.stdout.flush()
os._exit(0)
