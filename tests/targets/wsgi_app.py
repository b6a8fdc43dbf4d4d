# wsgi_app.py: a WSGI app served by gunicorn, and a bounded request loop to
# drive it, for tests/integration/test_apps.py and by hand. Each request
# runs handle_request -> compute_response, a CPU loop of about a
# millisecond in Python, and answers "PID RESULT" (the worker's pid).
#
# usage: python3 -u wsgi_app.py serve sync|gthread [--workers 2]
#                               [--threads 4] [--seconds S]
#   Runs gunicorn in this process (this pid is the master) on 127.0.0.1,
#   on a free port: a socket bound here to port 0 and handed to gunicorn as
#   fd://FD, so no port is guessed. Prints "port N", then "worker PID
#   ready" from each worker once it serves. Stops by itself (SIGTERM to
#   the master, gunicorn's graceful stop) after --seconds (default 600).
# usage: python3 wsgi_app.py load PORT SECONDS [CONCURRENCY] [N]
#   GETs /?n=N from CONCURRENCY threads (default 4) for SECONDS, one
#   connection per request; prints "requests R errors E pids P,P,...".
from __future__ import print_function
import argparse
import os
import signal
import socket
import sys
import threading
import time

DEFAULT_N = 15000


def compute_response(n):
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 1000003
    return acc


def handle_request(environ):
    n = DEFAULT_N
    for part in environ.get("QUERY_STRING", "").split("&"):
        if part.startswith("n="):
            n = int(part[2:])
    return compute_response(n)


def application(environ, start_response):
    body = ("%d %d\n" % (os.getpid(), handle_request(environ))).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]


def serve(argv):
    from gunicorn.app.base import BaseApplication

    ap = argparse.ArgumentParser(prog="wsgi_app.py serve")
    ap.add_argument("worker_class", choices=["sync", "gthread"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=600)
    a = ap.parse_args(argv)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.set_inheritable(True)
    print("port %d" % sock.getsockname()[1])
    sys.stdout.flush()

    def post_worker_init(worker):
        print("worker %d ready" % os.getpid())
        sys.stdout.flush()

    options = {
        "bind": ["fd://%d" % sock.fileno()],
        "workers": a.workers,
        "worker_class": a.worker_class,
        "loglevel": "warning",
        "post_worker_init": post_worker_init,
    }
    # gunicorn turns sync with threads > 1 into gthread: threads only there.
    if a.worker_class == "gthread":
        options["threads"] = a.threads

    class App(BaseApplication):
        def load_config(self):
            for k, v in options.items():
                self.cfg.set(k, v)

        def load(self):
            return application

    # gunicorn handles SIGTERM itself (graceful stop of the workers).
    signal.signal(signal.SIGALRM,
                  lambda s, f: os.kill(os.getpid(), signal.SIGTERM))
    signal.alarm(max(1, int(a.seconds)))
    App().run()


def load(port, seconds, concurrency=4, n=DEFAULT_N):
    """Returns (requests, errors, set of worker pids that answered)."""
    import http.client

    end = time.time() + seconds
    lock = threading.Lock()
    res = {"ok": 0, "err": 0, "pids": set()}

    def client():
        while time.time() < end:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                c.request("GET", "/?n=%d" % n)
                r = c.getresponse()
                body = r.read().decode()
                c.close()
                ok = r.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
            with lock:
                if ok:
                    res["ok"] += 1
                    res["pids"].add(int(body.split()[0]))
                else:
                    res["err"] += 1
                    time.sleep(0.01)

    ts = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return res["ok"], res["err"], res["pids"]


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(sys.argv[2:])
    elif len(sys.argv) > 3 and sys.argv[1] == "load":
        ok, err, pids = load(int(sys.argv[2]), float(sys.argv[3]),
                             *[int(x) for x in sys.argv[4:6]])
        print("requests %d errors %d pids %s" % (
            ok, err, ",".join(str(p) for p in sorted(pids))))
    else:
        sys.exit("usage: wsgi_app.py serve sync|gthread ... | "
                 "load PORT SECONDS")
