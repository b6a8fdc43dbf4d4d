# -*- coding: utf-8 -*-
# threads.py: a test target for `pystitch dump`. Runs on CPython 2.7 and 3.x.
# Parks each thread in its own function at a line marked "# @park:<key>";
# the test finds the lines from the markers, never from this interpreter.
# Prints "thread <tid> <key> <name>" for each parked thread, then "ready".
from __future__ import print_function
import ctypes
import os
import socket
import sys
import threading
import time

libc = ctypes.CDLL(None, use_errno=True)
SYS_gettid = 186  # x86_64
out_lock = threading.Lock()
held = threading.Lock()
held.acquire()
stop = []
parked = []


def gettid():
    return libc.syscall(SYS_gettid)


def report(key):
    with out_lock:
        parked.append(key)
        print("thread %d %s %s" % (gettid(), key,
                                   threading.current_thread().name))
        sys.stdout.flush()


def busy_worker():
    report("busy")
    n = 0
    while not stop: n += 1  # @park:busy


def sleeper():
    report("sleep")
    while True:
        time.sleep(3600)  # @park:sleep


def lock_waiter():
    report("lock")
    held.acquire()  # @park:lock


def recv_waiter(sock):
    report("recv")
    sock.recv(1)  # @park:recv


def recurse(depth):
    if depth > 1:
        return recurse(depth - 1)  # @park:recurse-call
    report("deep")
    time.sleep(3600)  # @park:deep


def named_worker():
    report("named")
    while True:
        time.sleep(3600)  # @park:named


def second_busy():
    report("busy2")
    x = 0
    while not stop: x = x * 2 % 7 + 1  # @park:busy2


def main():
    a, b = socket.socketpair()
    workers = [
        threading.Thread(target=busy_worker, name="busy"),
        threading.Thread(target=sleeper, name="sleeper"),
        threading.Thread(target=lock_waiter, name="lock-waiter"),
        threading.Thread(target=recv_waiter, args=(b,), name="recv-waiter"),
        threading.Thread(target=recurse, args=(40,), name="deep"),
        threading.Thread(target=named_worker,
                         name=u"custom \u00f1ame \u6570\u636e"
                         if sys.version_info[0] > 2
                         else "custom-name"),
        threading.Thread(target=second_busy, name="busy2"),
    ]
    if sys.version_info[0] > 2:
        # Non-ASCII identifiers exist from Python 3 on: in their own module
        # so that 2.7 can parse this file.
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import threads_unicode
        threads_unicode.report = report
        workers.append(threading.Thread(target=threads_unicode.entry,
                                        name="unicode"))
    # "sleeper" gets 40 more attributes: its instance dict outgrows the
    # shared keys (3.11+: no more inline or split values), so its name is
    # read through the object's own dict pointer.
    for i in range(40):
        setattr(workers[1], "extra_%d" % i, i)
    for w in workers:
        w.daemon = True
        w.start()
    # A native-only thread: pthread_create straight into libc's pause(), so
    # it never gets a Python thread state.
    native = ctypes.c_ulong()
    pause = ctypes.cast(libc.pause, ctypes.c_void_p)
    if libc.pthread_create(ctypes.byref(native), None, pause, None) != 0:
        raise SystemExit("pthread_create failed")
    with out_lock:
        print("native-threads 1")
        sys.stdout.flush()
    while len(parked) < len(workers):
        time.sleep(0.01)
    report("main")
    print("version %d.%d.%d" % tuple(sys.version_info[:3]))
    print("ready")
    sys.stdout.flush()
    while True:
        time.sleep(3600)  # @park:main


main()
