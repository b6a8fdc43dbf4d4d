# test_packages.py: the ways in other than a build from git: the release
# tarball (`make distcheck`: it builds and checks out of tree), the wheel
# (tools/build-wheel.sh) installed with pip in a venv of the sid rootfs's
# python3.14 and run from there on a python of that venv, and the Debian
# package (tools/build-deb.sh) built in and installed into a fresh trixie
# and sid rootfs, where it dumps that rootfs's python. Prints TAP and the
# summary line.
import glob
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytargets  # noqa: E402
import tap  # noqa: E402
from tap import BUILD, SRC  # noqa: E402

TAP = tap.Tap()
SID = os.path.join(pytargets.ROOTFS_DIR, "sid-rootfs")


def sh(argv, timeout=1800, **kw):
    r = subprocess.run(argv, capture_output=True, timeout=timeout, **kw)
    return r.returncode, (r.stdout + r.stderr).decode(errors="replace")


def check_distcheck():
    """make distcheck in the build directory: the tarball has what an out
    of tree build and its checks need."""
    rc, out = sh(["make", "distcheck"], cwd=BUILD)
    if rc != 0:
        return "make distcheck exited %d:\n%s" % (rc, out[-3000:])
    tars = re.findall(r"^(pystitch-[\d.]+\.tar\.gz)$", out, re.M)
    if not tars:
        return "no tarball named in:\n%s" % out[-1000:]
    path = os.path.join(BUILD, tars[0])
    print("# %s: %d KiB" % (tars[0], os.path.getsize(path) // 1024))
    os.unlink(path)
    return ""


def container(root, script, timeout=300):
    """script in rootfs root as a container (own pid and mount namespaces,
    its own /proc): (exit status, output)."""
    return sh(["unshare", "--pid", "--mount", "--fork", "chroot", root,
               "/bin/sh", "-c", "mount -t proc proc /proc || exit 90; " +
               script], timeout=timeout)


def dump_spinners(py, pystitch):
    """A shell script: faults.py spin under py, then `pystitch dump` of
    it; the dump is the script's output."""
    return ("%s -u /tmp/pst-targets/faults.py spin /tmp/pst-ctr > "
            "/tmp/pst-out & T=$!; n=0; until grep -q ready /tmp/pst-out; do "
            "sleep 0.05; n=$((n+1)); [ $n -lt 400 ] || exit 91; done; "
            "%s dump -p $T; rc=$?; kill $T; exit $rc" % (py, pystitch))


def copy_targets(root):
    dst = os.path.join(root, "tmp", "pst-targets")
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    shutil.copytree(pytargets.TARGETS, dst)


def check_wheel():
    rc, out = sh([os.path.join(SRC, "tools", "build-wheel.sh")])
    if rc != 0:
        return "build-wheel.sh exited %d:\n%s" % (rc, out[-3000:])
    whl = out.strip().splitlines()[-1]
    if not re.search(r"/pystitch-[\d.]+-py3-none-manylinux_2_17_x86_64\.whl$",
                     whl) or not os.path.exists(whl):
        return "no wheel: %s" % out
    print("# %s: %d KiB" % (os.path.basename(whl),
                            os.path.getsize(whl) // 1024))
    d = os.path.join(SID, "tmp", "pst-wheel")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    shutil.copy(whl, d)
    copy_targets(SID)
    name = os.path.basename(whl)
    rc, out = container(
        SID, "rm -rf /tmp/pst-venv && python3.14 -m venv /tmp/pst-venv && "
        "/tmp/pst-venv/bin/pip install -q --no-index /tmp/pst-wheel/%s && "
        "{ command -v pystitch >/dev/null && exit 93; }; "
        ". /tmp/pst-venv/bin/activate || exit 94; command -v pystitch || "
        "exit 95; %s"
        % (name, dump_spinners("python", "pystitch")))
    if rc != 0:
        return "in a venv of sid's python3.14: exit %d:\n%s" % (rc, out)
    if not out.startswith("/tmp/pst-venv/bin/pystitch\n") or \
            "spin_0" not in out or "Python 3.14" not in out:
        return "not the venv's pystitch, or no dump of the venv's " \
            "python:\n%s" % out
    return ""


def check_deb(dist):
    rc, out = sh([os.path.join(SRC, "tools", "build-deb.sh"), dist],
                 timeout=3000)
    if rc == 77:
        return None
    if rc != 0:
        return "build-deb.sh %s exited %d:\n%s" % (dist, rc, out[-3000:])
    print("".join("# " + x + "\n" for x in out.strip().splitlines()), end="")
    return ""


def main():
    t0 = time.time()
    if os.path.exists(os.path.join(BUILD, "Makefile")):
        TAP.check("make distcheck", check_distcheck, timed=True, skip=None)
    else:
        TAP.report(None, "make distcheck", "no configured build in %s" % BUILD)
    if not os.access(os.path.join(SID, "usr/lib/python3.14/ensurepip"),
                     os.R_OK):
        TAP.report(None, "wheel", "no python3.14 with venv in %s "
                   "(tests/setup-rootfs.sh)" % SID)
    else:
        TAP.check("wheel: pip install in a venv of sid's python3.14, "
                  "pystitch on its PATH dumps its python", check_wheel,
                  timed=True, skip=None)
    for dist in ("trixie", "sid"):
        TAP.check(".deb built for %s (dpkg-buildpackage, lintian), "
                  "installed in a fresh %s rootfs, dumps its python"
                  % (dist, dist), check_deb, dist, timed=True,
                  skip="tools/build-deb.sh %s: no rootfs to build in" % dist)
    print("# %d s" % (time.time() - t0))
    for f in glob.glob(os.path.join(SRC, "dist", "*.whl")):
        os.unlink(f)
    return TAP.finish()


if __name__ == "__main__":
    sys.exit(main())
