# badname.py: a test target whose threads' names are not valid UTF-8, for
# `pystitch dump --json` (which must still print valid JSON). Runs on CPython
# 2.7 and 3.x. A thread started with pthread_create into a ctypes callback
# (so it has a Python thread state but no threading.Thread, and dump names
# it by its /proc comm) sets its own comm to b"\xff\xfebad" with
# prctl(PR_SET_NAME) and waits in pause(); on 3.x a threading.Thread also
# gets a name with lone surrogates. Prints "ready" when both are named.
from __future__ import print_function
import ctypes
import sys
import threading
import time

libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NAME = 15  # <linux/prctl.h>
START = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
stop = []
named = []


def bad_comm(arg):
    if libc.prctl(PR_SET_NAME, ctypes.c_char_p(b"\xff\xfebad"), 0, 0, 0):
        named.append("prctl failed")
    named.append("ok")
    libc.pause()  # a CDLL call: the GIL is released while it waits
    return None


start = START(bad_comm)  # referenced for as long as the thread runs


def parked():
    while not stop:
        time.sleep(0.05)


def main():
    native = ctypes.c_ulong()
    if libc.pthread_create(ctypes.byref(native), None, start, None) != 0:
        raise SystemExit("pthread_create failed")
    while not named:
        time.sleep(0.01)
    if named[0] != "ok":
        raise SystemExit(named[0])
    if sys.version_info[0] >= 3:
        name = b"py\xff\xfename".decode("utf-8", "surrogateescape")
        threading.Thread(target=parked, name=name).start()
    print("ready")
    sys.stdout.flush()
    while True:
        time.sleep(3600)


main()
