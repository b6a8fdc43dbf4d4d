# torch_train.py: a small PyTorch CPU training job, for tests/integration/
# test_apps.py and by hand: an MLP trained on random tensors (train_loop ->
# train_step), a DataLoader with 2 worker processes building each sample in
# Python (make_sample), torch intra-op threads (OpenMP), a "logger" thread
# logging progress, and multiprocessing's queue feeder threads.
#
# usage: python3 -u torch_train.py [--seconds S] [--threads N] [--workers N]
#                                  [--start fork|spawn|forkserver]
# Prints "workers PID:NAME ..." (each DataLoader worker's pid and
# multiprocessing name), "threads N" (intra-op threads), "parallel B" (ATen's
# backend: OpenMP, native) and then "ready" once training runs.
# Trains for --seconds after "ready" (default 600, so that a forgotten one
# ends) or until killed; SIGINT and SIGTERM end it cleanly, workers too.
from __future__ import print_function
import argparse
import logging
import signal
import sys
import threading
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

log = logging.getLogger("train")
progress = {"step": 0, "loss": 0.0}
stop = threading.Event()


def make_sample(i):
    """One (input, label): some Python work per sample, as a real
    preprocessing step would do."""
    acc = 0
    for k in range(2000):
        acc = (acc * 31 + k + i) % 1000003
    x = torch.randn(64)
    x[0] = acc / 1000003.0
    return x, acc % 10


class RandomData(Dataset):
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        return make_sample(i)


class MLP(nn.Module):
    def __init__(self):
        super(MLP, self).__init__()
        self.net = nn.Sequential(nn.Linear(64, 512), nn.ReLU(),
                                 nn.Linear(512, 512), nn.ReLU(),
                                 nn.Linear(512, 10))

    def forward(self, x):
        return self.net(x)


def train_step(model, opt, loss_fn, x, y):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def train_loop(model, loader, seconds, on_ready):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    it = iter(loader)
    on_ready(it)
    end = time.time() + seconds
    while not stop.is_set() and time.time() < end:
        x, y = next(it)
        progress["loss"] = train_step(model, opt, loss_fn, x, y)
        progress["step"] += 1
    return it


def logger_loop(period):
    while not stop.wait(period):
        log.info("step %d loss %.3f", progress["step"], progress["loss"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--start", default=None,
                    help="multiprocessing start method of the workers")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(threadName)s %(message)s")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)

    def on_signal(signum, frame):
        stop.set()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    ctx = None
    if a.start:
        import multiprocessing
        ctx = multiprocessing.get_context(a.start)
    loader = DataLoader(RandomData(), batch_size=32, num_workers=a.workers,
                        persistent_workers=a.workers > 0,
                        multiprocessing_context=ctx)
    logger = threading.Thread(target=logger_loop, args=(0.5,), name="logger")
    logger.daemon = True
    logger.start()
    model = MLP()

    def on_ready(it):
        # One step first: the OpenMP pool starts at the first parallel op.
        x, y = next(it)
        train_step(model, torch.optim.SGD(model.parameters(), lr=0.01),
                   nn.CrossEntropyLoss(), x, y)
        ws = getattr(it, "_workers", [])
        print("workers " + " ".join("%d:%s" % (w.pid, w.name) for w in ws))
        print("threads %d" % torch.get_num_threads())
        backend = [line.split(":", 1)[1].strip() for line in
                   torch.__config__.parallel_info().splitlines()
                   if line.startswith("ATen parallel backend")]
        print("parallel %s" % (backend[0] if backend else "unknown"))
        print("ready")
        sys.stdout.flush()

    it = train_loop(model, loader, a.seconds, on_ready)
    stop.set()
    del it  # shuts the workers down
    log.info("done at step %d", progress["step"])


if __name__ == "__main__":
    main()
