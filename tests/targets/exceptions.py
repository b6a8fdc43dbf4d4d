# exceptions.py: threads with and without an exception being handled, for
# the exception states (dump's "exception", record --mode exception).
# Prints one JSON line {thread name: what sys.exc_info() gives in it (the
# type's name, or null)}, then "ready"; runs until killed.
import json
import sys
import threading
import time

truth = {}
lock = threading.Lock()
started = threading.Event()


def tell(name):
    t = sys.exc_info()[0]
    with lock:
        truth[name] = t.__name__ if t is not None else None


def spin_forever():
    x = 0
    while True:
        x += 1


def plain():
    tell("plain")
    spin_forever()


def handled_before():
    # handled one and left the except block: nothing now (3.11+ keep None
    # in the thread's item after that)
    try:
        raise OSError("gone")
    except OSError:
        pass
    tell("handled_before")
    spin_forever()


def in_handler():
    try:
        raise ValueError("boom")
    except ValueError:
        tell("in_handler")
        spin_forever()


def numbers():
    while True:
        yield 1


def gen_in_handler():
    # a generator runs inside the except block: its own (empty) item is
    # innermost while it runs; the handled exception is the outer one
    try:
        raise KeyError("k")
    except KeyError:
        tell("gen_in_handler")
        for _ in numbers():
            pass


for f in (plain, handled_before, in_handler, gen_in_handler):
    t = threading.Thread(target=f, name=f.__name__)
    t.daemon = True
    t.start()
while True:
    with lock:
        if len(truth) == 4:
            break
    time.sleep(0.01)
sys.stdout.write(json.dumps(truth) + "\n")
sys.stdout.write("ready\n")
sys.stdout.flush()
while True:
    time.sleep(100)
