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
#   tsd/           tiny shared objects carrying glibc's _thread_db_*
#                  descriptors and pthread_getspecific bytes copied from
#                  this machine's libc.so.6 (and musl's, from its
#                  libc.so), then the thread descriptor and key block of a
#                  live Python thread that set 40 keys (fuzz_tsd.c)
#   origin/        std::threads of a live C++ program (lambda, member
#                  function pointer, function pointer, c10::ThreadPool-like
#                  constructor lambda, functor) with the _State objects,
#                  vtables, type_info and names read from its memory;
#                  libgomp, pthreadpool and CPython start routines; long
#                  demangled names from libstdc++ (fuzz_origin.c)
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


# Stand-in libpythons for fuzz_analyse: the symbols the analysis looks up,
# PyGILState_GetThisThreadState and PyInterpreterState_Head in the shapes
# of the real ones (the key's address through the GOT, or a static).
ANALYSE_STUBS = {
    # name: (file name index in fuzz_analyse.c, C source)
    "py312": (0, """
int Py_Version = 0x030c01f0;
char _PyRuntime[4096];
long PyCode_Type[32], PyLong_Type[64], PyDict_Type[64], _Py_NoneStruct[2];
void *PyThread_tss_get(void *);
void *PyGILState_GetThisThreadState(void) {
  return PyThread_tss_get(_PyRuntime + 0x608);
}
void Py_Initialize(void) {}
"""),
    "py311": (0, """
int Py_Version = 0x030b07f0;
char _PyRuntime[4096];
long PyCode_Type[32], PyLong_Type[64];
void *PyThread_tss_get(void *);
void *PyGILState_GetThisThreadState(void) {
  return PyThread_tss_get(_PyRuntime + 0x250);
}
void Py_Initialize(void) {}
"""),
    "py314": (3, """
int Py_Version = 0x030e0af0;
char _PyRuntime[4096];
long PyCode_Type[32], PyLong_Type[64], _Py_NoneStruct[2];
void *PyThread_tss_get(void *);
void *PyGILState_GetThisThreadState(void) {
  return PyThread_tss_get(_PyRuntime + 0x608);
}
void Py_Initialize(void) {}
"""),
    "py315": (5, """
int Py_Version = 0x030f02f0;
char _PyRuntime[4096];
long PyCode_Type[32], PyLong_Type[64], _Py_NoneStruct[2];
__thread void *_Py_tss_tstate __attribute__((tls_model("initial-exec")));
void *PyGILState_GetThisThreadState(void) { return _Py_tss_tstate; }
void Py_Initialize(void) {}
"""),
    "py36": (1, """
static int autoTLSkey;
static void *interp_head;
void *_PyThreadState_Current;
long PyCode_Type[32], PyLong_Type[64];
void *PyThread_get_key_value(int);
void *PyGILState_GetThisThreadState(void) {
  return PyThread_get_key_value(autoTLSkey);
}
void *PyInterpreterState_Head(void) { return interp_head; }
void Py_Initialize(void) { autoTLSkey = 1; interp_head = &autoTLSkey; }
"""),
    "py27": (2, """
static void *interp_head;
void *_PyThreadState_Current;
long PyCode_Type[32], PyInt_Type[64];
void *PyInterpreterState_Head(void) { return interp_head; }
void Py_Initialize(void) { interp_head = &interp_head; }
"""),
}


def got_slots(so):
    """{symbol: GOT slot vaddr} of so's GLOB_DAT relocations."""
    out = subprocess.check_output(["readelf", "-rW", so]).decode()
    slots = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 5 and ("GLOB_DAT" in f[2] or "TPOFF64" in f[2]):
            slots[f[4]] = int(f[0], 16)
    return slots


def analyse():
    """fuzz_analyse seeds: each stub with the memory its analysis reads,
    mapped at a made-up address (bias), the interpreter at INTERP."""
    d = fresh("analyse")
    start, interp = 0x7f3a12000000, 0x7f3a20000000
    rt314 = fixture_runtime(os.path.join(top, "tests", "fixtures",
                                         "registry-sid314.txt"), 0x330)
    tmp = tempfile.mkdtemp()
    try:
        for tag, (name, src) in sorted(ANALYSE_STUBS.items()):
            c, so = os.path.join(tmp, tag + ".c"), os.path.join(tmp, tag)
            with open(c, "w") as f:
                f.write(src)
            subprocess.check_call(["gcc", "-O1", "-shared", "-fPIC",
                                   "-nostdlib", "-Wl,--build-id=none",
                                   "-o", so, c])
            syms = {n: v for n, (v, _) in elf_syms_all(so).items()}
            if tag == "py36":  # its statics found by disassembly only
                subprocess.check_call(["strip", "--strip-all", so])
            regions = []
            for sym, slot in got_slots(so).items():
                if sym == "_Py_tss_tstate":  # the thread-local's offset
                    regions.append((start + slot,
                                    struct.pack("<q", -0x38)))
                elif sym in syms:
                    regions.append((start + slot,
                                    struct.pack("<Q", start + syms[sym])))
            if "_PyRuntime" in syms:
                rt = bytearray(4096)
                if tag in ("py314", "py315"):
                    rt[:len(rt314)] = rt314
                    struct.pack_into("<Q", rt, 0x328, interp)
                else:
                    struct.pack_into("<Q", rt, 0x28, interp)
                off = 0x608 if tag != "py311" else 0x250
                struct.pack_into("<ii", rt, off, 1, 7)  # Py_tss_t
                regions.append((start + syms["_PyRuntime"], bytes(rt)))
            if "autoTLSkey" in syms:
                regions.append((start + syms["autoTLSkey"],
                                struct.pack("<i", 7)))
            if "interp_head" in syms:
                regions.append((start + syms["interp_head"],
                                struct.pack("<Q", interp)))
            if "PyLong_Type" in syms:  # tp_itemsize: 30-bit digits
                t = bytearray(512)
                struct.pack_into("<q", t, 0x28, 4)
                regions.append((start + syms["PyLong_Type"], bytes(t)))
            regions.append((interp, bytes(4096)))  # no thread state yet
            with open(so, "rb") as f:
                elf = f.read()
            with open(os.path.join(d, tag), "wb") as f:
                f.write(struct.pack("<IIQQII", 1, name, start, 0, len(elf), 0))
                f.write(elf)
                for addr, b in regions:
                    f.write(struct.pack("<QI", addr, len(b)) + b)
    finally:
        shutil.rmtree(tmp)
    print("analyse: %s" % " ".join(sorted(os.listdir(d))))


def elf_syms_all(path):
    """{name: (vaddr, size)} of every symbol of path (nm -S, .symtab)."""
    out = subprocess.check_output(["nm", "-S", path]).decode()
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4:
            syms.setdefault(f[3], (int(f[0], 16), int(f[1], 16)))
        elif len(f) == 3:
            syms.setdefault(f[2], (int(f[0], 16), 0))
    return syms


def fixture_runtime(path, size):
    """The first size bytes of _PyRuntime as a registry fixture holds
    them (zeros where it read nothing)."""
    head, regions, cur = {}, [], None
    for line in open(path, encoding="utf-8"):
        w = line.split()
        if not w or w[0].startswith("#"):
            continue
        if w[0] == "region":
            cur = [int(w[1], 16), bytearray()]
            regions.append(cur)
        elif w[0] == "zero" and cur is not None:
            cur[1] += bytes(int(w[1]))
        elif w[0] == "end":
            cur = None
        elif cur is not None:
            cur[1] += bytes.fromhex(w[0])
        elif len(w) == 2 and w[1].startswith("0x"):
            head[w[0]] = int(w[1], 16)
    buf = bytearray(size)
    for addr, data in regions:
        for i, b in enumerate(data):
            if 0 <= addr - head["runtime"] + i < size:
                buf[addr - head["runtime"] + i] = b
    return bytes(buf)


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
              "cgroup", "children", "syscall"]

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
            for kind in ["stat", "schedstat", "children", "syscall"]:
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
    put("syscall", "running", b"running\n")
    put("syscall", "nosys", b"-1 0x7ffd3a0c1f28 0x7f3b2c9e1a5d\n")
    put("syscall", "bad", b"202 0x1 0x 0x-3 0xffffffffffffffffff 0x0 0x0 "
        b"0x7ffd 0x7f\n")
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


def eh_frame_hdr_at(image, vaddr):
    """image (ELF64) with its PT_GNU_EH_FRAME moved to vaddr: a header whose
    table address wraps past 2^64 (a CI run found one that module.c took)."""
    img = bytearray(image)
    phoff, = struct.unpack_from("<Q", img, 32)
    phentsize, phnum = struct.unpack_from("<HH", img, 54)
    for i in range(phnum):
        o = phoff + i * phentsize
        if struct.unpack_from("<I", img, o)[0] == 0x6474e550:
            struct.pack_into("<Q", img, o + 16, vaddr)
    return bytes(img)


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
        put("vdso-eh-wrap", eh_frame_hdr_at(v, 0xfffffffffffffff8))
    print("symtab: %s" % " ".join(sorted(os.listdir(d))))


# fuzz_pyimage.c's struct header, after version_hex and long_shift.
PYIMAGE_FIELDS = ["runtime", "interp_head", "interp", "tstate_current",
                  "code_type", "none", "dict_type", "long_type", "int_type",
                  "str_type", "module_type", "coro_type", "gen_type",
                  "method_type", "set_type"]
PYIMAGE_AIO_WORDS = 13  # then .AsyncioDebug (3.14+), zeros before
ROOTFS = "/var/cache/pystitch"


def interpreters():
    """(label, version, argv prefix, rootfs or None) of the interpreters
    found here: pyenv's, the sid and trixie rootfs's (run chrooted)."""
    out = []
    for v in ["2.7", "3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12",
              "3.13"]:
        found = sorted(glob.glob("/root/.pyenv/versions/%s.*/bin/python%s"
                                 % (v, v)))
        if found:
            out.append(("py" + v.replace(".", ""), v, [found[-1]], None))
    for dist, exes in [("trixie", ["python3.13"]),
                       ("sid", ["python3.14", "python3.15"])]:
        root = os.path.join(ROOTFS, dist + "-rootfs")
        for exe in exes:
            if os.path.exists(os.path.join(root, "usr/bin", exe)):
                out.append(("%s%s" % (dist, exe[6:].replace(".", "")),
                            exe[6:], ["chroot", root, "/usr/bin/" + exe],
                            root))
    return out


def pyimage_captures(d):
    """Images of tests/targets/tasks.py (20 waiting tasks; 3.8+) and
    locals.py (frames holding each kind of value) as each interpreter
    holds them, captured by capture-pyimage (fuzz_pyimage.c with
    -DFUZZ_CAPTURE): the harness's own reads of a live target."""
    capture = os.path.join(os.environ.get("PST_FUZZ_BUILDDIR",
                                          os.path.join(top, "fuzz", "build")),
                           "capture-pyimage")
    made = []
    for label, v, argv, root in interpreters():
        for name in ["tasks", "locals"]:
            if name == "tasks" and v in ("2.7", "3.6", "3.7"):
                continue
            script = os.path.join(top, "tests", "targets", name + ".py")
            if root:
                shutil.copy(script, root + "/tmp/pst-seed.py")
                script = "/tmp/pst-seed.py"
            p = subprocess.Popen(argv + [script], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
            try:
                for line in p.stdout:
                    if line.strip() == "ready":
                        break
                out = os.path.join(d, "%s-%s" % (name, label))
                r = subprocess.run([capture, str(p.pid), out],
                                   env=dict(os.environ,
                                            ASAN_OPTIONS="detect_leaks=0"),
                                   stderr=subprocess.PIPE, text=True)
                if r.returncode == 0:
                    made.append("%s-%s" % (name, label))
                else:
                    print("pyimage: %s-%s: %s" % (name, label,
                                                  r.stderr.strip()[-200:]))
            finally:
                p.kill()
                p.wait()
                if root:
                    os.unlink(root + script)
    return made


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
    out += bytes(8 * PYIMAGE_AIO_WORDS)
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
    for f in os.listdir(d):
        if f.startswith(("tasks-", "locals-")):
            os.unlink(os.path.join(d, f))
    made = pyimage_captures(d)
    print("pyimage: %d registry seeds, captured %s" % (len(paths),
                                                     " ".join(made)))


def elf_syms(path):
    """{name: (vaddr, size)} of path's dynamic symbols (nm -D -S)."""
    out = subprocess.check_output(["nm", "-D", "-S", path]).decode()
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4:
            syms.setdefault(f[3].split("@")[0], (int(f[0], 16), int(f[1], 16)))
    return syms


def elf_bytes(path, vaddr, size):
    """size bytes at link-time address vaddr of ELF64 file path (its
    PT_LOAD segments)."""
    with open(path, "rb") as f:
        data = f.read()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _, off, va, _, filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and va <= vaddr and vaddr + size <= va + filesz:
            return data[off + vaddr - va:off + vaddr - va + size]
    raise ValueError("%s: 0x%x not in a segment" % (path, vaddr))


def tiny_so(out, rodata, funcs):
    """A shared object with the objects {name: bytes} in .rodata and the
    functions {name: bytes} in .text, each with its size."""
    asm = []
    for sect, syms, kind in ((".rodata", rodata, "@object"),
                             (".text", funcs, "@function")):
        asm.append("\t.section %s" % sect)
        for name, b in sorted(syms.items()):
            asm += ["\t.globl %s" % name, "\t.type %s, %s" % (name, kind),
                    "%s:" % name,
                    "\t.byte " + ",".join(str(x) for x in b),
                    "\t.size %s, %d" % (name, len(b))]
    tmp = tempfile.mkdtemp()
    try:
        src = os.path.join(tmp, "t.s")
        with open(src, "w") as f:
            f.write("\n".join(asm) + "\n")
        subprocess.check_call(["gcc", "-shared", "-nostdlib",
                               "-Wl,--build-id=none", "-o", out, src])
        with open(out, "rb") as f:
            return f.read()
    finally:
        shutil.rmtree(tmp)


def regions(pairs):
    return b"".join(struct.pack("<QI", a, len(b)) + b for a, b in pairs)


# struct header of fuzz_tsd.c: flags, elf_len, tp, key, pad, offset,
# multiplier, l2_offset, l2_data, start_offset.
TSD_HEADER = "<IIQII5q"

LIVE_TSD = r"""
import ctypes, struct, sys, threading
libc = ctypes.CDLL("libc.so.6")
libc.pthread_self.restype = ctypes.c_void_p
spec = (ctypes.c_uint32 * 3).in_dll(libc, "_thread_db_pthread_specific")[2]
size = (ctypes.c_uint32 * 3).in_dll(libc, "_thread_db_sizeof_pthread")[0]
def run():
    keys = []
    for i in range(40):
        k = ctypes.c_uint()
        libc.pthread_key_create(ctypes.byref(k), None)
        libc.pthread_setspecific(k, ctypes.c_void_p(0x1000 + i))
        keys.append(k.value)
    tp = libc.pthread_self()
    desc = ctypes.string_at(tp, size)
    l2 = struct.unpack_from("<Q", desc, spec + 8)[0]
    out = [(tp, desc)]
    if l2:
        out.append((l2, ctypes.string_at(l2, 32 * 16)))
    sys.stdout.write("%d %d\n" % (tp, keys[-1]))
    for a, b in out:
        sys.stdout.write("%d %s\n" % (a, b.hex()))
t = threading.Thread(target=run)
t.start()
t.join()
"""


def tsd():
    d = fresh("tsd")
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    syms = elf_syms(libc)
    db = {n: elf_bytes(libc, *syms[n]) for n in syms
          if n.startswith("_thread_db_")}
    gs = {"pthread_getspecific": elf_bytes(libc, *syms["pthread_getspecific"])}
    out = subprocess.check_output([sys.executable, "-c", LIVE_TSD]).decode()
    lines_ = out.split("\n")
    tp, key = (int(x) for x in lines_[0].split())
    img = regions((int(a), bytes.fromhex(h)) for a, h in
                  (l.split() for l in lines_[1:] if l))
    so = os.path.join(d, "so")

    def put(name, flags, elf, layout=(0, 0, 0, 0, 0)):
        with open(os.path.join(d, name), "wb") as f:
            f.write(struct.pack(TSD_HEADER, flags, len(elf), tp, key, 0,
                                *layout) + elf + img)

    put("glibc", 0, tiny_so(so, db, gs))
    put("glibc-db-only", 0, tiny_so(so, db, {}))
    put("glibc-code-only", 0, tiny_so(so, {}, gs))
    put("glibc-db-aarch64", 1, tiny_so(so, db, {}))
    musl = "/usr/lib/x86_64-linux-musl/libc.so"
    if os.path.exists(musl):
        m = elf_syms(musl)
        put("musl", 2, tiny_so(so, {}, {"pthread_getspecific": elf_bytes(
            musl, *m["pthread_getspecific"])}))
    # No ELF: glibc 2.36's default layout and start routine (tsd.c), the
    # l2-only double lookup, musl's indirect one.
    start = struct.unpack_from("<III", db["_thread_db_pthread_start_routine"])[2]
    put("layout-default", 8 | 32, b"", (0x318, 16, 0x510, 8, start))
    put("layout-l2only", 8 | 16, b"", (0x318, 16, 0x510, 8, 0))
    put("layout-musl", 4, b"", (0x80, 8, 0, 0, 0))
    os.unlink(so)
    print("tsd: %s" % " ".join(sorted(os.listdir(d))))


LIVE_THREADS = r"""
// Starts std::threads whose callables dump, from inside, their own
// std::thread::_State: the start routine and argument from glibc's
// struct pthread, the object, its vtable, type_info and name.
#include <dlfcn.h>
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
typedef unsigned long u64;
static long start_off;
static std::mutex mu;
static void region(u64 a, size_t n) {
  printf("region %lx ", a);
  for (size_t i = 0; i < n; i++)
    printf("%02x", ((const unsigned char *)a)[i]);
  printf("\n");
}
static const char *nz(const char *s) { return s && *s ? s : "-"; }
static void dump() {
  std::lock_guard<std::mutex> g(mu);
  u64 tp = (u64)pthread_self();
  u64 fn = *(u64 *)(tp + start_off), arg = *(u64 *)(tp + start_off + 8);
  u64 vptr = *(u64 *)arg, ti = *(u64 *)(vptr - 8), name = *(u64 *)(ti + 8);
  u64 run = *(u64 *)(vptr + 16);
  Dl_info a = {}, b = {};
  dladdr((void *)fn, &a);
  dladdr((void *)run, &b);
  printf("thread %lx %lx %lx %lx %lx %s %s %s %s\n", fn, arg, run,
         fn - (u64)a.dli_fbase, run - (u64)b.dli_fbase, nz(a.dli_fname),
         nz(a.dli_sname), nz(b.dli_fname), nz(b.dli_sname));
  region(arg, 16);
  region(vptr - 16, 40);
  region(ti, 16);
  // origin.c reads the name page by page, up to 2047 bytes at once
  size_t n = 4096 - (name & 4095);
  region(name, n < 2047 ? n : 2047);
  printf("end\n");
}
static void plain() { dump(); }
namespace app {
struct Worker { void run() { dump(); } };
template <typename T> struct Functor { void operator()() const { dump(); } };
void lambda() { std::thread([] { dump(); }).join(); }
}
namespace c10 {
struct ThreadPool {
  ThreadPool() { std::thread([this] { (void)this; dump(); }).join(); }
};
}
int main(int argc, char **argv) {
  start_off = argc > 1 ? atol(argv[1]) : 0;
  app::Worker w;
  app::lambda();
  c10::ThreadPool pool;
  std::thread(&app::Worker::run, &w).join();
  std::thread(&plain).join();
  std::thread(app::Functor<int>()).join();
  return 0;
}
"""

# struct header of fuzz_origin.c: fn, arg, run_lo, run_hi, vaddr,
# run_vaddr, tid, flags.
ORIGIN_HEADER = "<6QiI"


def origin():
    d = fresh("origin")
    n = 0

    def put(hdr, strs, img=b""):
        nonlocal n
        n += 1
        with open(os.path.join(d, "%02d" % n), "wb") as f:
            f.write(struct.pack(ORIGIN_HEADER, *hdr) +
                    b"".join(x.encode() + b"\0" for x in strs) + img)

    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    start = struct.unpack_from("<III", elf_bytes(
        libc, *elf_syms(libc)["_thread_db_pthread_start_routine"]))[2]
    tmp = tempfile.mkdtemp()
    try:
        src = os.path.join(tmp, "t.cc")
        exe = os.path.join(tmp, "threads")
        with open(src, "w") as f:
            f.write(LIVE_THREADS)
        subprocess.check_call(["g++", "-O0", "-rdynamic", "-pthread", "-o",
                               exe, src, "-ldl"])
        out = subprocess.check_output([exe, str(start)]).decode()
    finally:
        shutil.rmtree(tmp)
    th, img = None, []
    for line in out.splitlines():
        f = line.split()
        if f[0] == "thread":
            th, img = f[1:], []
        elif f[0] == "region":
            img.append((int(f[1], 16), bytes.fromhex(f[2])))
        elif f[0] == "end":
            fn, arg, run, va, rva = (int(x, 16) for x in th[:5])
            strs = [x if x != "-" else "" for x in th[5:9]]
            flags = (2 if not strs[1] else 0) | (8 if not strs[3] else 0)
            strs[2] = os.path.basename(strs[2]) or "threads"
            put((fn, arg, run, run + 1, va, rva, 1000 + n, flags),
                strs + ["PTThreadPool", "python3"], regions(img))
    # Names only (no memory): the pools, CPython, a named thread.
    gomp = "/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"
    put((0x7f0000001000, 0, 0, 0, 0x1000, 0, 7, 0),
        [gomp, "gomp_thread_start", "", "", "PTThreadPool", "python3"])
    put((0x7f0000002000, 0, 0, 0, 0xd790, 0, 8, 2 | 16),
        ["/opt/lib/libpthreadpool.so.0", "", "", "", "", "python3"])
    put((0x401000, 0, 0, 0, 0x1000, 0, 9, 0),
        ["/usr/bin/python3.11", "pythread_wrapper", "", "", "worker-1",
         "python3.11"])
    put((0, 0, 0, 0, 0, 0, 10, 0), ["", "", "", "", "python3", "python3"])
    # The longest demangled operator names of this machine's libstdc++.
    cxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
    if os.path.exists(cxx):
        names = subprocess.check_output(["nm", "-DC", cxx]).decode()
        names = [l.split(" ", 2)[2] for l in names.splitlines()
                 if l.count(" ") >= 2 and "operator" in l]
        for name in sorted(names, key=len)[-4:]:
            put((0x7f0000003000, 0, 0, 0, 0x3000, 0, 11, 0),
                ["/opt/lib/libfoo.so.1", name, "", "", "", ""])
    print("origin: %d seeds" % n)


if __name__ == "__main__":
    lines()
    disasm()
    elf()
    writers()
    proc()
    symtab()
    pyimage()
    tsd()
    origin()
    analyse()
