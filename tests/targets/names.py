# -*- coding: utf-8 -*-
# names.py: a test target for the thread registry (threading._active).
# Runs on CPython 2.7 and 3.x. Starts named threads (one with a non-ASCII
# name and one with a name outside the BMP on 3.x), one with threading's
# default name, and a thread started with the low-level start_new_thread
# that calls threading.current_thread() (so it is a _DummyThread); each
# prints "thread <tid> <ident> <name>" (tid: the kernel's, as the target's
# pid namespace sees it; ident: threading.get_ident()), then "ready".
# Commands on stdin, one a line, each answered by "done <command>":
#   rename  renames the main thread "renamed-main" and the first worker
#           "renamed-worker" (from the main thread), printing the new lines
#   churn   starts a thread "late" and ends the worker "short-lived"
#   many    starts 300 more threads, "many-0" to "many-299" (_active grows
#           past the sizes where its keys object is rebuilt and its index
#           width changes)
# The process exits at end of input.
from __future__ import print_function
import ctypes
import sys
import threading
import time

try:
    import _thread as low
except ImportError:  # 2.7
    import thread as low

try:
    get_ident = threading.get_ident
except AttributeError:  # 2.7
    get_ident = low.get_ident

libc = ctypes.CDLL(None, use_errno=True)
SYS_gettid = 186  # x86_64
out_lock = threading.Lock()
started = []
stop_short = []


def gettid():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    return libc.syscall(SYS_gettid)


def report(name=None):
    t = threading.current_thread()
    line = "thread %d %d %s" % (gettid(), get_ident(),
                                t.name if name is None else name)
    with out_lock:
        if sys.version_info[0] == 2:
            sys.stdout.write(line + "\n")
        else:
            sys.stdout.buffer.write((line + "\n").encode("utf-8"))
        sys.stdout.flush()


def parked():
    report()
    started.append(1)
    while True:
        time.sleep(3600)


def short_lived():
    report()
    started.append(1)
    while not stop_short:
        time.sleep(0.01)


def dummy():
    # Not started by threading: current_thread() makes a _DummyThread.
    report()
    started.append(1)
    while True:
        time.sleep(3600)


def main():
    py3 = sys.version_info[0] > 2
    names = ["worker-a", "sleeper", "lock-waiter"]
    if py3:
        names += [u"custom \u00f1ame", u"thread \U0001f9f5 emoji"]
    workers = [threading.Thread(target=parked, name=n) for n in names]
    workers.append(threading.Thread(target=parked))  # default name
    workers.append(threading.Thread(target=short_lived, name="short-lived"))
    for w in workers:
        w.daemon = True
        w.start()
    low.start_new_thread(dummy, ())
    while len(started) < len(workers) + 1:
        time.sleep(0.01)
    report()
    with out_lock:
        print("ready")
        sys.stdout.flush()
    late = None
    for line in iter(sys.stdin.readline, ""):
        cmd = line.strip()
        if cmd == "rename":
            threading.current_thread().name = "renamed-main"
            workers[0].name = "renamed-worker"
            report()
            with out_lock:
                print("rename %d renamed-worker" % workers[0].ident)
        elif cmd == "churn":
            n = len(started)
            late = threading.Thread(target=parked, name="late")
            late.daemon = True
            late.start()
            stop_short.append(1)
            workers[-1].join()
            while len(started) < n + 1:
                time.sleep(0.01)
        elif cmd == "many":
            n = len(started)
            for i in range(300):
                m = threading.Thread(target=parked, name="many-%d" % i)
                m.daemon = True
                m.start()
            while len(started) < n + 300:
                time.sleep(0.01)
        with out_lock:
            print("done " + cmd)
            sys.stdout.flush()


main()
