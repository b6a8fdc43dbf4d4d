# late_threading.py: a test target that imports threading late. Runs on
# CPython 2.7 and 3.x. Prints "ready" with threading not imported (nothing
# here or at startup imports it), then on the line "import" from stdin
# imports it, starts a thread "late-worker" and prints
# "thread 0 <ident> <name>" for it and for the main thread, then
# "done import". Exits at end of input.
import sys
import time

if "threading" in sys.modules:
    raise SystemExit("threading imported at startup")
print("ready")
sys.stdout.flush()
for line in iter(sys.stdin.readline, ""):
    if line.strip() == "import":
        import threading
        started = []

        def worker():
            started.append(1)
            while True:
                time.sleep(3600)

        w = threading.Thread(target=worker, name="late-worker")
        w.daemon = True
        w.start()
        while not started:
            time.sleep(0.01)
        for t in (w, threading.current_thread()):
            print("thread 0 %d %s" % (t.ident, t.name))
        print("done import")
        sys.stdout.flush()
