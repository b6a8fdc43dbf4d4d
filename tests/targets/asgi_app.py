# asgi_app.py: an ASGI app served by uvicorn (asyncio loop, h11), for
# tests/integration/test_apps.py and by hand. Each request runs
# handle_request: an await of a short sleep (its I/O), then
# compute_response, a CPU loop of about a millisecond in Python; it answers
# "PID RESULT". Drive it with wsgi_app.py's load mode.
#
# usage: python3 -u asgi_app.py [--seconds S]
#   Serves on 127.0.0.1, on a free port (a socket bound here to port 0 and
#   handed to uvicorn): prints "port N", then "ready" once it serves. Stops
#   by itself after --seconds (default 600).
import argparse
import asyncio
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wsgi_app import DEFAULT_N, compute_response  # noqa: E402


async def handle_request(scope):
    n = DEFAULT_N
    for part in scope.get("query_string", b"").decode().split("&"):
        if part.startswith("n="):
            n = int(part[2:])
    await asyncio.sleep(0.002)
    return compute_response(n)


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = ("%d %d\n" % (os.getpid(), await handle_request(scope))).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def main():
    import uvicorn

    ap = argparse.ArgumentParser(prog="asgi_app.py")
    ap.add_argument("--seconds", type=float, default=600)
    a = ap.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print("port %d" % sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, loop="asyncio", http="h11", lifespan="off",
                            log_level="warning", access_log=False)
    server = uvicorn.Server(config)

    def ready():
        while not server.started:
            threading.Event().wait(0.01)
        print("ready", flush=True)
        threading.Event().wait(a.seconds)
        server.should_exit = True

    threading.Thread(target=ready, daemon=True).start()
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
