#!/usr/bin/env python3
# make_seeds.py: (re)writes the generated seed corpora under fuzz/corpus/:
#   lines/         line tables of real functions, dumped by every installed
#                  interpreter (fuzz/dump_linetables.py)
#   disasm_*/      the disassembly test vectors (tests/fixtures and, when
#                  present, /work/shared/testdata), split by architecture
#   elf/           small real ELF files: /usr/bin/true and a tiny shared
#                  object with the symbols the analysis looks up
#   writers/       a few hand-made profiles
#   proc/          /proc files (maps, status, stat, schedstat, environ,
#                  cmdline, cgroup, children) of a real Python process with
#                  a thread, a child and a file name with spaces, plus
#                  hostile variants; the first byte names the file
#   symtab/        small real ELF files after a 4-byte split point: a C and
#                  a C++ program, a MiniDebugInfo one (xz with a 64 KiB and
#                  with the default dictionary), a stripped one followed by
#                  its separate debug file, the vDSO
#   pyimage/       the thread-registry images captured from pyenv's CPythons
#                  (tests/fixtures/registry-*.txt) in fuzz_pyimage.c's
#                  binary form
# The frame walker's seeds are written by gen-frame-seeds (fuzz/build.sh
# --seeds). Run from anywhere; needs gcc for the ELF seed.
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
corpus = os.path.join(top, "fuzz", "corpus")


def fresh(name):
    d = os.path.join(corpus, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def pythons():
    found = sorted(glob.glob("/root/.pyenv/versions/*/bin/python"))
    found += [p for p in ["/usr/bin/python3.11", "/usr/bin/python3"]
              if os.path.exists(p)]
    return found


def lines():
    d = fresh("lines")
    n = 0
    for py in pythons():
        try:
            out = subprocess.check_output(
                [py, os.path.join(top, "fuzz", "dump_linetables.py")],
                stderr=subprocess.DEVNULL).decode()
        except (OSError, subprocess.CalledProcessError):
            continue
        for line in out.splitlines():
            fmt, first, off, hexs = (line.split() + [""])[:4]
            data = struct.pack("<Bii", int(fmt), int(first), int(off))
            data += bytes.fromhex(hexs)
            n += 1
            with open(os.path.join(d, "%s-%d" % (
                    os.path.basename(os.path.dirname(os.path.dirname(py)))
                    if "pyenv" in py else os.path.basename(py), n)),
                    "wb") as f:
                f.write(data)
    print("lines: %d seeds" % n)


HEXRUN = re.compile(r"(?:\b[0-9a-f]{2}\b ){3,}\b[0-9a-f]{2}\b")


def disasm():
    dx, da = fresh("disasm_x86_64"), fresh("disasm_aarch64")
    n = {dx: 0, da: 0}
    for md in [os.path.join(top, "tests", "fixtures",
                            "disasm-vectors-local.md"),
               "/work/shared/testdata/disasm-vectors.md"]:
        if not os.path.exists(md):
            continue
        arm = False
        for line in open(md):
            label = line.strip()
            # A label line names the build; a line of bytes follows it or
            # ends it. Anything saying arm64/aarch64 is an aarch64 vector.
            if re.search(r"arm64|aarch64|ARM64", label):
                arm = True
            elif label.startswith('"') or label.startswith("##"):
                arm = False
            for m in HEXRUN.finditer(line):
                data = bytes.fromhex(m.group(0).replace(" ", ""))
                dest = da if arm else dx
                n[dest] += 1
                with open(os.path.join(dest, "v%03d" % n[dest]), "wb") as f:
                    f.write(data)
    print("disasm: %d x86_64, %d aarch64 seeds" % (n[dx], n[da]))


STUB = r"""
int Py_Version = 0x030c01f0;
char _PyRuntime[4096] = "xdebugpy";
long PyCode_Type[32];
long _Py_NoneStruct[2];
static int interp_head;
void *PyThread_tss_get(void *);
void *PyGILState_GetThisThreadState(void) {
  return PyThread_tss_get(_PyRuntime + 0x608);
}
void *PyInterpreterState_Head(void) { return &interp_head; }
void Py_Initialize(void) {}
"""


def elf():
    d = fresh("elf")
    shutil.copy("/usr/bin/true", os.path.join(d, "true"))
    tmp = tempfile.mkdtemp()
    try:
        src = os.path.join(tmp, "stub.c")
        with open(src, "w") as f:
            f.write(STUB)
        so = os.path.join(d, "libpython-stub.so")
        subprocess.check_call(["gcc", "-O1", "-shared", "-fPIC", "-nostdlib",
                               "-Wl,--build-id=none", "-o", so, src])
        subprocess.check_call(["gcc", "-O1", "-c", "-o",
                               os.path.join(d, "stub.o"), src])
    finally:
        shutil.rmtree(tmp)
    print("elf: %s" % " ".join(sorted(os.listdir(d))))


def s(text):
    b = text.encode("utf-8", "surrogateescape")
    return bytes([len(b)]) + b


def writers():
    d = fresh("writers")
    # period, 1 process (pid, cmdline, rank, local_rank, world_size),
    # 2 threads (process, tid, name), then samples (thread, n, frames:
    # name, file, line; time step, weight).
    head = struct.pack("<I", 10000000) + b"\x00" + struct.pack("<I", 4242) + \
        s("python app.py") + b"\x02\x02\x04" + b"\x01" + \
        b"\x00" + struct.pack("<I", 4242) + s("MainThread") + \
        b"\x00" + struct.pack("<I", 4243) + s("worker \"<&>\"")
    samples = b""
    for i in range(6):
        samples += bytes([i % 2, 3]) + s("<module>") + s("app.py") + \
            struct.pack("<i", 1) + s("main") + s("app.py") + \
            struct.pack("<i", 10) + s("work;\xe9\x01") + s("lib/\xff.py") + \
            struct.pack("<i", 20 + i % 3) + bytes([10, 10])
    for w in range(6):
        with open(os.path.join(d, "w%d" % w), "wb") as f:
            f.write(bytes([w]) + head + samples)
    print("writers: 6 seeds")


# fuzz_proc.c's first byte: which file the rest is.
PROC_KINDS = ["maps", "status", "stat", "schedstat", "environ", "cmdline",
              "cgroup", "children"]

PROC_TARGET = r"""
import os, sys, threading, time
d = sys.argv[1]
with open(os.path.join(d, "odd name (deleted)\nx"), "w") as f:
    f.write("x" * 8192)
f = open(os.path.join(d, "odd name (deleted)\nx"), "rb")
import mmap
m = mmap.mmap(f.fileno(), 8192, prot=mmap.PROT_READ)
os.unlink(os.path.join(d, "odd name (deleted)\nx"))
t = threading.Thread(target=time.sleep, args=(60,), name="worker")
t.start()
pid = os.fork()
if pid == 0:
    time.sleep(60)
    os._exit(0)
print("ready", flush=True)
time.sleep(60)
"""


def proc():
    d = fresh("proc")
    n = 0

    def put(kind, name, data):
        nonlocal n
        n += 1
        with open(os.path.join(d, "%s-%s" % (kind, name)), "wb") as f:
            f.write(bytes([PROC_KINDS.index(kind)]) + data)

    py = ([p for p in pythons() if "3.12" in p] or [sys.executable])[0]
    tmp = tempfile.mkdtemp()
    # A made-up environment: ours is not to be written into the corpus.
    env = {"PATH": "/usr/bin:/bin", "HOME": "/home/app", "LANG": "C.UTF-8",
           "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "8"}
    child = subprocess.Popen([py, "-W", "ignore", "-c", PROC_TARGET, tmp, "arg with spaces"],
                             stdout=subprocess.PIPE, env=env)
    try:
        child.stdout.readline()
        base = "/proc/%d" % child.pid
        for kind in ["maps", "status", "stat", "environ", "cmdline",
                     "cgroup"]:
            with open(os.path.join(base, kind), "rb") as f:
                put(kind, "real", f.read())
        for i, tid in enumerate(sorted(os.listdir(base + "/task"))):
            for kind in ["stat", "schedstat", "children"]:
                with open("%s/task/%s/%s" % (base, tid, kind), "rb") as f:
                    put(kind, "task%d" % i, f.read())
    finally:
        child.kill()
        child.wait()
        shutil.rmtree(tmp)
    # What a target can make of its own names, and what the kernel never
    # writes but a parser must still refuse.
    put("maps", "deleted", b"7f0000000000-7f0000001000 r-xp 00001000 08:01 "
        b"1234 /usr/lib/libpython3.12.so.1.0 (deleted)\n"
        b"7f0000001000-7f0000002000 rw-p 00000000 00:00 0 \n"
        b"7f0000002000-7f0000003000 r--p 00000000 08:01 99 "
        b"/tmp/a b\\012c  d\n")
    put("maps", "unsorted", b"2000-3000 r--p 0 0:0 0\n1000-2000 r--p 0 0:0 0")
    put("maps", "short-perms", b"1000-2000 r 0 0:0 0 /x")
    put("status", "evil", b"Name:\t" + b"A" * 100 + b"\nTgid:\t-5\n"
        b"PPid:\t99999999999999999999\nNSpid:\t12\t1\nTracerPid:\t0\n")
    put("stat", "parens", b"42 (a) b) (c) S " + b"1 " * 60)
    put("environ", "cut", b"A=1\0RANK=\0RANK=7\0WORLD_SIZE=99999999999")
    put("cgroup", "fake-v2", b"3:cpu:/evil0::/fake\n0::/system.slice/"
        b"docker-abc.scope\n")
    put("children", "odd", b"1 -2 0 99999999999 17 ")
    print("proc: %d seeds" % n)


def vdso():
    """The vDSO of this process, read from /proc/self/mem."""
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[vdso]"):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            with open("/proc/self/mem", "rb") as f:
                f.seek(lo)
                return f.read(hi - lo)
    return None


def symtab():
    d = fresh("symtab")
    helpers = os.path.join(top, "tests", "helpers")
    tmp = tempfile.mkdtemp()

    def put(name, data, debug=b""):
        split = len(data) if debug else 0
        with open(os.path.join(d, name), "wb") as f:
            f.write(struct.pack("<I", split) + data + debug)

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    try:
        t = lambda name: os.path.join(tmp, name)
        subprocess.check_call(["gcc", "-O1", "-o", t("mini"),
                               os.path.join(helpers, "symtab-mini.c")])
        subprocess.check_call(["g++", "-O1", "-o", t("cxx"),
                               os.path.join(helpers, "symtab-cxx.cc")])
        put("c", read(t("mini")))
        put("cxx", read(t("cxx")))
        for tag, opt in [("small-dict", "--lzma2=dict=64KiB"), ("xz", "")]:
            subprocess.check_call(
                ["sh", os.path.join(helpers, "make-minidebuginfo.sh"),
                 t("mini"), t("dd-" + tag)],
                env=dict(os.environ, XZ_OPT=opt))
            put("minidebuginfo-" + tag, read(t("dd-" + tag)))
        subprocess.check_call(["objcopy", "--only-keep-debug", t("cxx"),
                               t("cxx.debug")])
        subprocess.check_call(["strip", "--strip-all", "-o",
                               t("cxx.stripped"), t("cxx")])
        put("cxx-split", read(t("cxx.stripped")), read(t("cxx.debug")))
    finally:
        shutil.rmtree(tmp)
    v = vdso()
    if v:
        put("vdso", v)
    print("symtab: %s" % " ".join(sorted(os.listdir(d))))


# fuzz_pyimage.c's struct header, after version_hex and long_shift.
PYIMAGE_FIELDS = ["runtime", "interp_head", "interp", "tstate_current",
                  "code_type", "none", "dict_type", "long_type", "int_type",
                  "str_type", "module_type", "coro_type", "gen_type",
                  "method_type", "set_type"]


def fixture_to_pyimage(path):
    """A replay fixture (tests/helpers/frame-fixture.h) as a fuzz_pyimage
    input: the header, then each region as {u64 addr, u32 len, bytes}."""
    head, regions, cur = {}, [], None
    for line in open(path, encoding="utf-8"):
        w = line.split()
        if not w or w[0].startswith("#"):
            continue
        if w[0] == "region":
            cur = [int(w[1], 16), bytearray()]
            regions.append(cur)
        elif w[0] == "zero":
            cur[1] += bytes(int(w[1]))
        elif w[0] == "end":
            cur = None
        elif cur is not None:
            cur[1] += bytes.fromhex(w[0])
        elif len(w) == 2 and w[1].startswith("0x"):
            head[w[0]] = int(w[1], 16)
    out = struct.pack("<II", head["version"], head.get("long_shift", 30))
    out += b"".join(struct.pack("<Q", head.get(f, 0)) for f in PYIMAGE_FIELDS)
    for addr, data in regions:
        out += struct.pack("<QI", addr, len(data)) + bytes(data)
    return out


def pyimage():
    d = os.path.join(corpus, "pyimage")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.startswith("registry-"):
            os.unlink(os.path.join(d, f))
    paths = sorted(glob.glob(os.path.join(top, "tests", "fixtures",
                                          "registry-*.txt")))
    for p in paths:
        name = os.path.basename(p)[:-4]
        with open(os.path.join(d, name), "wb") as f:
            f.write(fixture_to_pyimage(p))
    print("pyimage: %d registry seeds" % len(paths))


if __name__ == "__main__":
    lines()
    disasm()
    elf()
    writers()
    proc()
    symtab()
    pyimage()
