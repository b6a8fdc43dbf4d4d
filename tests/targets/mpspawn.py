# mpspawn.py: a parent that starts argv[1] (default 2) workers with
# multiprocessing's "spawn" method (each a new interpreter whose command
# line is multiprocessing's -c line), for the figures tests; each worker
# spins in work() until the parent is gone. Prints "ready" once the workers run. 3.4+.
import multiprocessing
import os
import sys
import time


def work(parent):
    # Ends with the parent (killed by the test: a daemon worker of a
    # killed parent would spin on).
    while os.getppid() == parent:
        for _ in range(1000):
            sum(range(1000))


if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=work, args=(os.getpid(),), daemon=True)
             for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 2)]
    for p in procs:
        p.start()
    time.sleep(0.5)
    print("ready")
    sys.stdout.flush()
    for p in procs:
        p.join()
