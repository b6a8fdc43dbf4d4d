# subinterp.py: threads and sub-interpreters (3.8+): the main thread calls
# outer_call(), which runs code in a sub-interpreter; that code starts a
# thread of its own there ("sub-worker", in sub_worker) and then sleeps in
# sub_sleep; a thread of the main interpreter ("w") sleeps in main_worker.
# Prints "ready" ("ready no-thread" where a sub-interpreter may start no
# thread) from inside the sub-interpreter once all are in place,
# then sleeps. A dump must show the main thread's sub-interpreter frames on
# top of outer_call, and both other threads with their own functions.
import sys
import threading
import time

try:
    import _interpreters as interpreters  # 3.13+
except ImportError:
    try:
        import _xxsubinterpreters as interpreters  # 3.8-3.12
    except ImportError:
        print("no sub-interpreters in this Python")
        sys.exit(3)

CODE = """
import sys
import threading
import time

def sub_worker():
    while True:
        time.sleep(0.1)

def sub_sleep():
    # (not a daemon: isolated sub-interpreters (3.12+) allow none; some
    # builds allow no thread at all: then "ready no-thread")
    try:
        threading.Thread(target=sub_worker, name="sub-worker").start()
        print("ready")
    except RuntimeError:
        print("ready no-thread")
    sys.stdout.flush()
    time.sleep(100000)

sub_sleep()
"""


def main_worker():
    while True:
        time.sleep(0.1)


def outer_call():
    iid = interpreters.create()
    if hasattr(interpreters, "exec"):
        interpreters.exec(iid, CODE)  # 3.13+
    else:
        interpreters.run_string(iid, CODE)


w = threading.Thread(target=main_worker, name="w")
w.daemon = True
w.start()
outer_call()
