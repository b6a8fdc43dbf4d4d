# native.py: threads for the --native tests. "sorter": libc qsort (C) with a
# Python comparator that spins (Python -> C -> Python); "sleeper": blocked
# in time.sleep (a system call); with argv[1], a C library whose
# pst_native_start() starts a thread with no Python state spinning in
# pst_native_spin_here. Prints "ready", then the sorter's tid ("sorter N").
from __future__ import print_function
import ctypes
import ctypes.util
import sys
import threading
import time

libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                       ctypes.POINTER(ctypes.c_int))


def py_compare(a, b):  # CALLBACK_DEF
    x = 0
    for i in range(3000):
        x += i  # CALLBACK_LINE
    return a[0] - b[0]


def sort_forever():
    cmp = CMP(py_compare)
    n = 32
    arr = (ctypes.c_int * n)()
    while True:
        for i in range(n):
            arr[i] = (i * 7919) % n
        libc.qsort(arr, n, ctypes.sizeof(ctypes.c_int), cmp)  # CALLER_LINE


def sleeper():
    while True:
        time.sleep(10)  # SLEEP_LINE


if len(sys.argv) > 1:
    lib = ctypes.CDLL(sys.argv[1])
    lib.pst_native_start()
for fn in (sort_forever, sleeper):
    t = threading.Thread(target=fn, name=fn.__name__)
    t.daemon = True
    t.start()
print("ready")
sys.stdout.flush()
while True:
    time.sleep(1)
