# exits.py: a test target for thread listings while threads exit. For
# each "round" line on stdin: start PAIRS pairs of threads, one that waits
# (E) and one that lives on (L), so that each L follows an E in the
# kernel's thread list; print "round <tid>..." (the L threads' tids); on
# "go" the E threads all end; print "done" 1 ms later; on "next" the L
# threads end too. At end of input it exits.
import sys
import threading
import time

PAIRS = 8


def main():
    for line in iter(sys.stdin.readline, ""):
        if line.strip() != "round":
            continue
        gate, stop = threading.Event(), threading.Event()
        tids = []

        def parked():
            tids.append(threading.get_native_id())
            stop.wait()

        es, longs = [], []
        for _ in range(PAIRS):
            es.append(threading.Thread(target=gate.wait))
            es[-1].start()
            longs.append(threading.Thread(target=parked))
            longs[-1].start()
            while len(tids) < len(longs):  # L after its E in the list
                time.sleep(0.0002)
        print("round " + " ".join(str(t) for t in tids), flush=True)
        sys.stdin.readline()  # go
        gate.set()
        for t in es:
            t.join()
        time.sleep(0.001)
        print("done", flush=True)
        sys.stdin.readline()  # next
        stop.set()
        for t in longs:
            t.join()


main()
