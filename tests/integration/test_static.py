# test_static.py: pystitch-static, the statically linked program
# (tools/build-static.sh, `make static`): it is built, needs no shared
# library, and copied alone into the sid rootfs (where the libraries a
# shared pystitch needs are hidden: /dev/null mounted over each in the
# container's own mount namespace) it dumps, records and unwinds the native stack
# of that container's python3.14 from inside the container, and pushes to a
# receiver on the host by the name "localhost", over http and https (the CA
# given with --push-ca). Also --push-ca on the host's build. Prints TAP and
# the summary line.
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pushrecv  # noqa: E402
import pytargets  # noqa: E402
import tap  # noqa: E402
from tap import SRC, pystitch  # noqa: E402

TAP = tap.Tap()
TMP = tap.tmpdir("static")
STATIC = os.path.join(SRC, "pystitch-static")
ROOT = os.path.join(pytargets.ROOTFS_DIR, "sid-rootfs")
# What the dynamic pystitch needs and a static one must not: the sid rootfs
# has some (python3.14's and systemd's dependencies), hidden in the
# container while pystitch-static runs there.
LIBS = ["libelf.so.1", "libcapstone.so", "libunwind-ptrace.so", "libuv.so.1",
        "libprotobuf-c.so", "libjansson.so", "libseccomp.so", "libcurl.so"]
state = {"built": False}


def build():
    """tools/build-static.sh, its time and the binary's size."""
    t0 = time.time()
    r = subprocess.run([os.path.join(SRC, "tools", "build-static.sh")],
                       capture_output=True, timeout=1800)
    if r.returncode != 0:
        return "build-static.sh exited %d:\n%s" % (
            r.returncode, (r.stdout + r.stderr).decode(errors="replace")[-3000:])
    print("# built in %.0f s: %s, %d KiB" % (time.time() - t0, STATIC,
                                             os.path.getsize(STATIC) // 1024))
    state["built"] = True
    return ""


def check_static():
    """No interpreter and no dynamic section; --version says static."""
    r = subprocess.run(["readelf", "-ld", STATIC], capture_output=True)
    out = r.stdout.decode()
    if "INTERP" in out or "(NEEDED)" in out:
        return "dynamically linked:\n%s" % out[-2000:]
    t0 = time.time()
    v = subprocess.run([STATIC, "--version"], capture_output=True)
    took = time.time() - t0
    text = v.stdout.decode()
    print("# --version in %.1f ms: %s" % (took * 1000,
                                          text.splitlines()[1] if text else ""))
    if v.returncode != 0 or not re.search(r"^build: static", text, re.M) or \
            "--push: libcurl" not in text or "OpenSSL" not in text:
        return "--version: exit %d: %s" % (v.returncode, text)
    return ""


def libs_in_root():
    """The rootfs's copies of LIBS, as paths inside it (a directory seen
    twice through the /lib -> usr/lib link counts once)."""
    found, seen = [], set()
    for d in ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib",
              "lib"):
        full = os.path.join(ROOT, d)
        try:
            names = os.listdir(full)
        except OSError:
            continue
        if os.path.realpath(full) in seen:
            continue
        seen.add(os.path.realpath(full))
        found += ["/%s/%s" % (d, n) for n in names for lib in LIBS
                  if n.startswith(lib) and
                  not os.path.isdir(os.path.join(full, n))]
    return found


def in_container(script, target_args, timeout=120):
    """Runs the sid rootfs as a container (own pid and mount namespaces,
    its /proc): faults.py spin (4 threads in spin_0..spin_3) under
    python3.14, then script with $T its pid and $P the static pystitch,
    both inside. Returns (exit status, stdout, stderr) of the script."""
    dst = os.path.join(ROOT, "tmp", "pst-targets")
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    shutil.copytree(pytargets.TARGETS, dst)
    os.makedirs(os.path.join(ROOT, "tmp", "pst-static"), exist_ok=True)
    shutil.copy(STATIC, os.path.join(ROOT, "tmp", "pst-static", "pystitch"))
    hide = "".join("mount --bind /dev/null %s || exit 92; " % p
                   for p in libs_in_root())
    sh = ("mount -t proc proc /proc || exit 90; "
          "python3.14 -u /tmp/pst-targets/faults.py %s > /tmp/pst-out & T=$!; "
          "n=0; until grep -q ready /tmp/pst-out; do sleep 0.05; "
          "n=$((n+1)); [ $n -lt 400 ] || exit 91; done; "
          "%sP=/tmp/pst-static/pystitch; %s; rc=$?; kill $T; exit $rc"
          % (target_args, hide, script))
    r = subprocess.run(["unshare", "--pid", "--mount", "--fork", "chroot",
                        ROOT, "/bin/sh", "-c", sh], capture_output=True,
                       timeout=timeout)
    return (r.returncode, r.stdout.decode(errors="replace"),
            r.stderr.decode(errors="replace"))


def check_dump():
    rc, out, err = in_container("$P dump -p $T", "spin /tmp/pst-ctr")
    if rc != 0:
        return "exit %d: %s %s" % (rc, out, err)
    missing = [f for f in ("Python 3.14", "spin_0", "spin_3") if f not in out]
    if missing:
        return "%s missing from:\n%s" % (missing, out)
    return ""


def check_native():
    rc, out, err = in_container("$P dump --native -p $T", "spin /tmp/pst-ctr")
    if rc != 0:
        return "exit %d: %s %s" % (rc, out, err)
    # the interpreter's and libc's frames, named from the container's files
    if not re.search(r"\(libc\.so\.6\)", out) or \
            not re.search(r"\((libpython3\.14[^)]*|python3\.14)\)", out) or \
            "spin_0" not in out:
        return "no native frames of libc and python3.14:\n%s" % out
    return ""


def check_record():
    rc, out, err = in_container(
        "$P record -p $T -d 1 -r 200 -f folded -o /tmp/pst-static/out.folded",
        "spin /tmp/pst-ctr")
    path = os.path.join(ROOT, "tmp", "pst-static", "out.folded")
    if rc != 0 or not os.path.exists(path):
        return "exit %d: %s" % (rc, err)
    stacks = list(pytargets.folded(path))
    spins = sum(c for frames, c in stacks
                if any(f.startswith("spin_") for f in frames))
    print("# record in the container: %d samples, %d in spin_N" % (
        sum(c for _, c in stacks), spins))
    if spins < 50:
        return "%d spin_ samples:\n%s" % (spins, err)
    return ""


def push_in_container(recv, extra):
    rc, out, err = in_container(
        "$P record -p $T -d 2 --push-interval 1 --push %s %s"
        % (recv.url.replace("127.0.0.1", "localhost"), extra),
        "spin /tmp/pst-ctr")
    reqs = recv.accepted()
    if rc != 0 or len(reqs) < 2:
        return "exit %d, %d requests taken: %s" % (rc, len(reqs), err)
    frames = set()
    for r in reqs:
        prof = pushrecv.decode_pprof(pushrecv.profile_part(r))
        frames |= {f for _, fr, _ in prof["samples"] for f in fr}
    if not any(f.startswith("spin_") for f in frames):
        return "no spin_ frame in the profiles: %s" % sorted(frames)[:10]
    print("# pushed from the container: %d profiles" % len(reqs))
    return ""


def check_push():
    recv = pushrecv.Receiver()
    try:
        return push_in_container(recv, "")
    finally:
        recv.stop()


def make_cert():
    """A self-signed certificate for localhost: (cert, key) paths."""
    cert, key = os.path.join(TMP, "cert.pem"), os.path.join(TMP, "key.pem")
    if not os.path.exists(cert):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                        "-nodes", "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost",
                        "-keyout", key, "-out", cert], check=True,
                       capture_output=True)
    return cert, key


def check_push_https():
    cert, key = make_cert()
    shutil.copy(cert, os.path.join(ROOT, "tmp", "pst-cert.pem"))
    recv = pushrecv.Receiver(tls=(cert, key))
    try:
        return push_in_container(recv, "--push-ca /tmp/pst-cert.pem")
    finally:
        recv.stop()


def check_push_ca_host(interp):
    """The host's build: https with --push-ca taken; without it the
    server's certificate is refused by the system's CAs, and the failure
    names --push-ca; an unreadable --push-ca is a usage error."""
    cert, key = make_cert()
    t = pytargets.Target(interp, "faults.py", ["spin", os.path.join(TMP, "c")])
    try:
        while t.readline().strip() != "ready":
            pass
        recv = pushrecv.Receiver(tls=(cert, key))
        try:
            r = pystitch(["record", "-p", str(t.pid), "-d", "1.5",
                          "--push-interval", "1", "--push", recv.url,
                          "--push-ca", cert])
            err = r.stderr.decode(errors="replace")
            if r.returncode != 0 or len(recv.accepted()) < 1:
                return "--push-ca: exit %s, %d taken: %s" % (
                    r.returncode, len(recv.accepted()), err)
            n = len(recv.accepted())
            r = pystitch(["record", "-p", str(t.pid), "-d", "1",
                          "--push-interval", "1", "--push-timeout", "2",
                          "--push", recv.url])
            err = r.stderr.decode(errors="replace")
            if len(recv.accepted()) != n or "--push-ca" not in err:
                return "no --push-ca: %d more taken, stderr: %s" % (
                    len(recv.accepted()) - n, err)
        finally:
            recv.stop()
        r = pystitch(["record", "-p", str(t.pid), "-d", "1", "--push",
                      "https://localhost:1", "--push-ca", "/nonexistent"])
        err = r.stderr.decode(errors="replace")
        if r.returncode != 2 or "--push-ca: cannot read" not in err:
            return "--push-ca /nonexistent: exit %s: %s" % (r.returncode, err)
        return ""
    finally:
        t.stop()


def main():
    found, _ = pytargets.interpreters()
    local = [i for i in found if not i.rootfs]
    TAP.check("static build (tools/build-static.sh)", build, timed=True,
              skip=None)
    if not state["built"]:
        for name in ("statically linked", "in the sid rootfs"):
            TAP.report(None, name, "no pystitch-static")
    else:
        TAP.check("statically linked, --version says so", check_static,
                  skip=None)
        if not os.access(os.path.join(ROOT, "usr/bin/python3.14"), os.X_OK):
            TAP.report(None, "in the sid rootfs", "no %s with python3.14 "
                       "(tests/setup-rootfs.sh makes it)" % ROOT)
        else:
            print("# hidden in the container: %s" % " ".join(libs_in_root()))
            run = lambda name, fn: TAP.check(name, fn, timed=True, skip=None)
            run("alone in the sid rootfs: dump of its python3.14", check_dump)
            run("alone in the sid rootfs: dump --native", check_native)
            run("alone in the sid rootfs: record", check_record)
            run("alone in the sid rootfs: push to http://localhost",
                check_push)
            run("alone in the sid rootfs: push to https://localhost with "
                "--push-ca", check_push_https)
    if shutil.which("openssl") and local:
        TAP.check("--push-ca: https with the given CA, refused without it",
                  check_push_ca_host, local[-1], timed=True, skip=None)
    else:
        TAP.report(None, "--push-ca", "no openssl or no local CPython")
    shutil.rmtree(TMP, ignore_errors=True)
    return TAP.finish()


if __name__ == "__main__":
    sys.exit(main())
