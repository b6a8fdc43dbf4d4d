# ddp_hang.py: a torch.distributed job (gloo) where one rank does not come
# to the collective: every rank but the last waits in all_reduce (step)
# for the last, which sleeps (late_rank).
#
# usage: python3 -u ddp_hang.py launch N [SECONDS] [THREADS]
#   the launcher (as torchrun's agent: Python, the ranks its children):
#   starts N ranks of this script with torchrun's environment (RANK,
#   LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT on a free port),
#   prints "rank R ready" from each as it goes where it stays, then
#   "ready"; waits for them. Debian 12's torchrun (torch 1.13 on 3.11)
#   fails in its own redirects handling, hence this launcher.
#   Runs for SECONDS (default 600) at most. THREADS (default 0): Python
#   threads more in each rank, waiting on an Event (a prefetcher's,
#   a logger's), for the benchmark of 4 ranks x 20 threads.
import os
import socket
import subprocess
import sys
import time

LIFE = float(sys.argv[3]) if len(sys.argv) > 3 else 600
EXTRA = int(sys.argv[4]) if len(sys.argv) > 4 else 0
dist = None  # torch.distributed, in the ranks


def late_rank():
    time.sleep(LIFE)  # the stuck one: never reaches the collective


def step(t):
    dist.all_reduce(t)  # the others wait here for it


def launch(n):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ranks = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r),
                   WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        ranks.append(subprocess.Popen(
            [sys.executable, "-u", os.path.abspath(__file__), "rank", str(n),
             str(LIFE), str(EXTRA)], env=env, stdout=subprocess.PIPE))
    for p in ranks:
        sys.stdout.write(p.stdout.readline().decode())
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    deadline = time.time() + LIFE
    for p in ranks:
        try:
            p.wait(max(deadline - time.time(), 0.1))
        except subprocess.TimeoutExpired:
            p.kill()


def rank_main():
    global dist
    import torch
    import torch.distributed

    dist = torch.distributed
    import threading
    never = threading.Event()
    for i in range(EXTRA):
        threading.Thread(target=never.wait, name="extra-%d" % i,
                         daemon=True).start()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.ones(4)
    print("rank %d ready" % rank, flush=True)
    if rank == world - 1:
        late_rank()
    else:
        step(t)


if __name__ == "__main__":
    if sys.argv[1] == "launch":
        launch(int(sys.argv[2]))
    else:
        rank_main()
