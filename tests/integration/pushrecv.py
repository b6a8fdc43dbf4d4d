# pushrecv.py: a profiling server for the push tests: Pyroscope's ingest
# endpoint's request contract (POST /ingest, query name/from/until/format/
# sampleRate, multipart/form-data with the pprof in the field "profile"),
# on 127.0.0.1, answering as told (ok, 500, 429, hang), and an independent
# pprof decoder: gzip, then `protoc --decode` with proto/profile.proto,
# whose text output is parsed here.
import email.parser
import email.policy
import gzip
import http.server
import os
import socket
import subprocess
import threading
import time
import urllib.parse

SRC = os.environ.get("PST_SRCDIR", ".")


class Receiver:
    """An ingest endpoint. mode: "ok", "500", "429", "hang" (answers
    after hang_s seconds), changeable while it runs."""

    def __init__(self, mode="ok", port=0, hang_s=30, tls=None):
        """tls: (certificate file, key file) to serve https."""
        self.mode = mode
        self.hang_s = hang_s
        self.requests = []  # every request, as a dict
        self.conns = set()  # open connections, closed by stop()
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)
        self.answering = 0  # requests between recorded and answered
        recv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                u = urllib.parse.urlsplit(self.path)
                r = {"method": "POST", "path": u.path,
                     "query": urllib.parse.parse_qs(u.query),
                     "ctype": self.headers.get("Content-Type", ""),
                     "headers": dict(self.headers.items()),
                     "body": body, "time": time.time(), "mode": recv.mode}
                mode = recv.mode
                # A hung request is one the client gave up on: not
                # counted as taken, whatever comes after.
                status = {"ok": 200, "500": 500, "429": 429,
                          "hang": "hung", "400": 400}[mode]
                r["status"] = status
                # Recorded before the answer goes out: a client that
                # exits as soon as it has its answer must find its request
                # here (recorded after, a loaded machine let the test read
                # the list first).
                with recv.lock:
                    recv.requests.append(r)
                    if mode != "hang":
                        recv.answering += 1
                if mode == "hang":
                    time.sleep(recv.hang_s)
                    status = 200
                msg = b"ok" if status == 200 else b"no"
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    self.wfile.flush()
                except OSError:
                    if mode != "hang":  # the client saw no answer: not taken
                        with recv.lock:
                            recv.requests.remove(r)
                finally:
                    if mode != "hang":
                        with recv.lock:
                            recv.answering -= 1
                            recv.idle.notify_all()

            def setup(self):
                http.server.BaseHTTPRequestHandler.setup(self)
                with recv.lock:
                    recv.conns.add(self.connection)

            def do_GET(self):
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port),
                                                      Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        if tls:
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.server.socket = ctx.wrap_socket(self.server.socket,
                                                 server_side=True)
            self.url = "https://localhost:%d" % self.port
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def accepted(self):
        with self.lock:
            return [r for r in self.requests if r["status"] == 200]

    def stop(self):
        """Dies as a server process would: the listening socket and every
        kept-alive connection closed."""
        self.server.shutdown()
        self.server.server_close()
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.conns.clear()
            # What was being answered is taken or not by now: the list is
            # final when stop() returns.
            deadline = time.time() + 5
            while self.answering and time.time() < deadline:
                self.idle.wait(0.05)


def profile_part(r):
    """The "profile" field of a multipart/form-data request, or None."""
    if not r["ctype"].startswith("multipart/form-data"):
        return None
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + r["ctype"].encode() + b"\r\n\r\n" + r["body"])
    for part in msg.iter_parts():
        if part.get_param("name", header="content-disposition") == "profile":
            return part.get_payload(decode=True)
    return None


def parse_text(text):
    """protoc's text format into nested dicts: each field a list."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
            continue
        if line.endswith("{"):
            d = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(d)
            stack.append(d)
            continue
        k, v = line.split(":", 1)
        v = v.strip()
        if v.startswith('"'):
            v = v[1:-1].encode("latin-1").decode("unicode_escape").encode(
                "latin-1").decode("utf-8", "replace")
        else:
            v = int(v)
        stack[-1].setdefault(k, []).append(v)
    return root


def decode_pprof(data):
    """A gzipped (or plain) pprof profile, decoded by protoc: a dict with
    samples [(count, frames innermost first, {label: value})]."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    out = subprocess.run(
        ["protoc", "--proto_path=%s/proto" % SRC,
         "--decode=perftools.profiles.Profile",
         "%s/proto/profile.proto" % SRC],
        input=data, capture_output=True, check=True).stdout.decode()
    p = parse_text(out)
    strings = p.get("string_table", [])
    funcs = {f["id"][0]: strings[f.get("name", [0])[0]]
             for f in p.get("function", [])}
    locs = {}
    for loc in p.get("location", []):
        line = loc.get("line", [{}])[0]
        locs[loc["id"][0]] = funcs.get(line.get("function_id", [0])[0], "?")
    samples = []
    for s in p.get("sample", []):
        labels = {}
        for lab in s.get("label", []):
            key = strings[lab["key"][0]]
            labels[key] = (strings[lab["str"][0]] if "str" in lab
                           else lab.get("num", [0])[0])
        frames = [locs.get(i, "?") for i in s.get("location_id", [])]
        samples.append((s["value"][0], frames, labels))
    types = [strings[t["type"][0]] for t in p.get("sample_type", [])]
    return {"samples": samples, "types": types,
            "time_nanos": p.get("time_nanos", [0])[0],
            "duration_nanos": p.get("duration_nanos", [0])[0]}


def parse_name(name):
    """APP{k=v,...} as (app, {k: v})."""
    app, _, rest = name.partition("{")
    labels = {}
    for kv in rest.rstrip("}").split(","):
        if "=" in kv:
            k, v = kv.split("=", 1)
            labels[k.strip()] = v.strip()
    return app, labels
