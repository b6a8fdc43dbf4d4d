/* test-output.c: every output writer on a small hand-made profile (two
 * processes, three threads, a non-ASCII name, names with ';', '<&>' and a
 * newline, synthetic roots, multi-sample runs), each file checked by an
 * independent reader run as a program: python3's json and xml.etree,
 * `protoc --decode` for pprof, a parse of the folded lines, and headless
 * Chromium rendering the SVG and running its script. Also an empty and a
 * large random profile, the JSON writer's escapes, the registry, and the
 * atomicity of pst__writer_save().
 *
 * The checker scripts are embedded below and written to the test's
 * temporary directory; they hold the expected values, computed by hand
 * from make_profile(). PST_SRCDIR locates proto/profile.proto.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "output/json.h"
#include "output/writer.h"
#include "profile/profile.h"
#include "task.h"

/* ---- checker scripts (python3) ---- */

static const char py_folded[] =
    "# Parses collapsed stacks: \"frame;frame;frame count\" per line.\n"
    "import sys\n"
    "expected = {\n"
    "    \"process 1000 python train.py;<module> (train.py:10);train (train.py:"
    "20);\"\n"
    "    \"Model.step (model.py:5)\": 6,\n"
    "    \"process 1000 python train.py;<module> (train.py:10);train (train.py:"
    "20);\"\n"
    "    \"gr\\u00fc\\u00dfe_\\u03bb (model.py)\": 3,\n"
    "    \"process 1000 python train.py;<module> (train.py:10);\"\n"
    "    \"a:b<&>\\\"' (weird.py:7);multi line (weird.py:8)\": 4,\n"
    "    \"process 1000 python train.py;worker_loop (train.py:40);\"\n"
    "    \"gr\\u00fc\\u00dfe_\\u03bb (model.py)\": 5,\n"
    "    \"process 2000;<module> (train.py:10);train (train.py:20);\"\n"
    "    \"Model.step (model.py:5)\": 3,\n"
    "}\n"
    "got = {}\n"
    "with open(sys.argv[1], \"rb\") as f:\n"
    "    data = f.read().decode(\"utf-8\")\n"
    "assert data.endswith(\"\\n\"), \"last line not terminated\"\n"
    "for line in data.split(\"\\n\")[:-1]:\n"
    "    stack, sep, count = line.rpartition(\" \")\n"
    "    assert sep and count.isdigit(), \"bad line %r\" % line\n"
    "    assert stack not in got, \"stack twice: %r\" % stack\n"
    "    assert all(stack.split(\";\")), \"empty frame in %r\" % line\n"
    "    got[stack] = int(count)\n"
    "assert got == expected, \"got %r\" % got\n"
    "print(\"folded ok: %d stacks, %d samples\" % (len(got), sum(got.values()))"
    ")\n";

static const char py_speedscope[] =
    "# Checks a speedscope file against the essentials of its schema and the\n"
    "# expected per-thread samples.\n"
    "import json, sys\n"
    "with open(sys.argv[1], encoding=\"utf-8\") as f:\n"
    "    d = json.load(f)\n"
    "assert d[\"$schema\"] == \"https://www.speedscope.app/file-format-schema.j"
    "son\"\n"
    "frames = d[\"shared\"][\"frames\"]\n"
    "assert isinstance(frames, list) and frames\n"
    "for fr in frames:\n"
    "    assert set(fr) <= {\"name\", \"file\", \"line\", \"col\"}, fr\n"
    "    assert isinstance(fr[\"name\"], str)\n"
    "    if \"file\" in fr:\n"
    "        assert isinstance(fr[\"file\"], str) and fr[\"file\"], fr\n"
    "    if \"line\" in fr:\n"
    "        assert isinstance(fr[\"line\"], int) and fr[\"line\"] > 0, fr\n"
    "    if fr[\"name\"].startswith(\"process \"):\n"
    "        assert \"file\" not in fr and \"line\" not in fr, fr\n"
    "byname = {fr[\"name\"]: fr for fr in frames}\n"
    "assert byname[\"gr\\u00fc\\u00dfe_\\u03bb\"] == {\"name\": \"gr\\u00fc\\u0"
    "0dfe_\\u03bb\",\n"
    "                                           \"file\": \"model.py\"}\n"
    "assert byname[\"Model.step\"] == {\"name\": \"Model.step\", \"file\": \"mo"
    "del.py\",\n"
    "                                \"line\": 5}\n"
    "assert \"a;b<&>\\\"'\" in byname and \"multi\\nline\" in byname\n"
    "R0 = \"process 1000 python train.py\"\n"
    "A = [R0, \"<module>\", \"train\", \"Model.step\"]\n"
    "B = [R0, \"<module>\", \"train\", \"gr\\u00fc\\u00dfe_\\u03bb\"]\n"
    "C = [R0, \"<module>\", \"a;b<&>\\\"'\", \"multi\\nline\"]\n"
    "D = [R0, \"worker_loop\", \"gr\\u00fc\\u00dfe_\\u03bb\"]\n"
    "E = [\"process 2000\", \"<module>\", \"train\", \"Model.step\"]\n"
    "MS = 1000000\n"
    "P0 = \"pid 1000: python train.py --epochs 3 [rank 0/2, local_rank 0]\"\n"
    "expect = {\n"
    "    \"thread 1000 MainThread (%s)\" % P0:\n"
    "        ([A, B, A, C, A], [30 * MS, 20 * MS, 10 * MS, 40 * MS, 20 * MS],\n"
    "         0, 220 * MS),\n"
    "    \"thread 1001 worker <&> (%s)\" % P0:\n"
    "        ([D, B], [50 * MS, 10 * MS], 5 * MS, 65 * MS),\n"
    "    \"thread 2000 MainThread (pid 2000 [rank 1/2])\":\n"
    "        ([E], [36 * MS], 0, 36 * MS),\n"
    "}\n"
    "profiles = d[\"profiles\"]\n"
    "assert 0 <= d.get(\"activeProfileIndex\", 0) < len(profiles)\n"
    "assert len(profiles) == len(expect), [p[\"name\"] for p in profiles]\n"
    "for p in profiles:\n"
    "    assert p[\"type\"] == \"sampled\" and p[\"unit\"] == \"nanoseconds\"\n"
    "    assert p[\"name\"] in expect, p[\"name\"]\n"
    "    stacks, weights, start, end = expect[p[\"name\"]]\n"
    "    assert len(p[\"samples\"]) == len(p[\"weights\"])\n"
    "    for s in p[\"samples\"]:\n"
    "        assert all(isinstance(i, int) and 0 <= i < len(frames) for i in s)"
    "\n"
    "    # Empty samples are the time it was not sampled: the clock kept.\n"
    "    runs = [(s, w) for s, w in zip(p[\"samples\"], p[\"weights\"]) if s]\n"
    "    got = [[frames[i][\"name\"] for i in s] for s, _ in runs]\n"
    "    assert got == stacks, (p[\"name\"], got)\n"
    "    assert [w for _, w in runs] == weights, (p[\"name\"], "
    "p[\"weights\"])\n"
    "    assert p[\"startValue\"] == start and p[\"endValue\"] == end, p[\"name"
    "\"]\n"
    "    assert p[\"endValue\"] - p[\"startValue\"] == sum(p[\"weights\"])\n"
    "print(\"speedscope ok: %d frames, %d profiles\" % (len(frames), len(profil"
    "es)))\n";

static const char py_chrome[] =
    "# Checks a Chrome trace: metadata, complete-event fields, nesting, and the"
    "\n"
    "# exact flame chart of each thread.\n"
    "import json, sys\n"
    "from decimal import Decimal\n"
    "with open(sys.argv[1], encoding=\"utf-8\") as f:\n"
    "    d = json.load(f, parse_float=Decimal)\n"
    "assert d[\"displayTimeUnit\"] == \"ms\"\n"
    "ev = d[\"traceEvents\"]\n"
    "assert isinstance(ev, list)\n"
    "meta = [e for e in ev if e[\"ph\"] == \"M\"]\n"
    "xs = [e for e in ev if e[\"ph\"] == \"X\"]\n"
    "assert len(meta) + len(xs) == len(ev), \"unexpected phases\"\n"
    "pnames = {e[\"pid\"]: e[\"args\"][\"name\"] for e in meta\n"
    "          if e[\"name\"] == \"process_name\"}\n"
    "assert pnames == {1000: \"python train.py --epochs 3 [rank 0/2, local_rank"
    " 0]\",\n"
    "                  2000: \"pid 2000 [rank 1/2]\"}, pnames\n"
    "tnames = {(e[\"pid\"], e[\"tid\"]): e[\"args\"][\"name\"] for e in meta\n"
    "          if e[\"name\"] == \"thread_name\"}\n"
    "assert tnames == {(1000, 1000): \"MainThread\", (1000, 1001): \"worker <&>"
    "\",\n"
    "                  (2000, 2000): \"MainThread\"}, tnames\n"
    "order = {e[\"pid\"]: e[\"args\"][\"sort_index\"] for e in meta\n"
    "         if e[\"name\"] == \"process_sort_index\"}\n"
    "assert order == {1000: 0, 2000: 1}, order\n"
    "threads = {}\n"
    "for e in xs:\n"
    "    for k in (\"ph\", \"ts\", \"dur\", \"pid\", \"tid\", \"name\"):\n"
    "        assert k in e, (k, e)\n"
    "    assert isinstance(e[\"name\"], str)\n"
    "    assert isinstance(e[\"pid\"], int) and isinstance(e[\"tid\"], int)\n"
    "    assert e[\"ts\"] >= 0 and e[\"dur\"] >= 0, e\n"
    "    threads.setdefault((e[\"pid\"], e[\"tid\"]), []).append(e)\n"
    "for key, es in threads.items():\n"
    "    ts = [e[\"ts\"] for e in es]\n"
    "    assert ts == sorted(ts), \"events of %r not in time order\" % (key,)\n"
    "    open_ = []\n"
    "    for e in sorted(es, key=lambda e: (e[\"ts\"], -e[\"dur\"])):\n"
    "        while open_ and open_[-1][\"ts\"] + open_[-1][\"dur\"] <= e[\"ts\""
    "]:\n"
    "            open_.pop()\n"
    "        if open_:\n"
    "            top = open_[-1]\n"
    "            assert e[\"ts\"] + e[\"dur\"] <= top[\"ts\"] + top[\"dur\"], "
    "\\\n"
    "                \"%r overlaps %r without nesting\" % (e, top)\n"
    "        open_.append(e)\n"
    "R0 = \"process 1000 python train.py\"\n"
    "G = \"gr\\u00fc\\u00dfe_\\u03bb\"\n"
    "ms = lambda v: Decimal(v) * 1000\n"
    "expect = {\n"
    "    (1000, 1000): [(R0, 0, 100), (\"<module>\", 0, 100), (\"train\", 0, 60"
    "),\n"
    "                   (\"Model.step\", 0, 30), (G, 30, 20), (\"Model.step\", "
    "50, 10),\n"
    "                   (\"a;b<&>\\\"'\", 60, 40), (\"multi\\nline\", 60, 40),"
    "\n"
    "                   (R0, 200, 20), (\"<module>\", 200, 20), (\"train\", 200"
    ", 20),\n"
    "                   (\"Model.step\", 200, 20)],\n"
    "    (1000, 1001): [(R0, 5, 60), (\"worker_loop\", 5, 50), (G, 5, 50),\n"
    "                   (\"<module>\", 55, 10), (\"train\", 55, 10), (G, 55, 10"
    ")],\n"
    "    (2000, 2000): [(\"process 2000\", 0, 32), (\"<module>\", 0, 32),\n"
    "                   (\"train\", 0, 32), (\"Model.step\", 0, 32)],\n"
    "}\n"
    "for key, want in expect.items():\n"
    "    got = sorted((e[\"name\"], Decimal(e[\"ts\"]), Decimal(e[\"dur\"]))\n"
    "                 for e in threads.get(key, []))\n"
    "    want = sorted((n, ms(t), ms(dur)) for n, t, dur in want)\n"
    "    assert got == want, (key, got, want)\n"
    "assert set(threads) == set(expect)\n"
    "for e in xs:\n"
    "    if e[\"name\"] == \"Model.step\":\n"
    "        assert e[\"args\"] == {\"file\": \"model.py\", \"line\": 5}, e\n"
    "    if e[\"name\"].startswith(\"process \"):\n"
    "        assert \"args\" not in e, e\n"
    "    if e[\"name\"] == G:\n"
    "        assert e[\"args\"] == {\"file\": \"model.py\"}, e\n"
    "print(\"chrome ok: %d metadata, %d complete events\" % (len(meta), len(xs)"
    "))\n";

static const char py_svg[] =
    "# Parses the flame graph as XML and checks its frames: count, tooltips,\n"
    "# geometry (root at the bottom, widths proportional to samples, children\n"
    "# over their parents), labels that fit, and no external resources.\n"
    "import sys\n"
    "import xml.etree.ElementTree as ET\n"
    "S = \"{http://www.w3.org/2000/svg}\"\n"
    "root = ET.parse(sys.argv[1]).getroot()\n"
    "assert root.tag == S + \"svg\", root.tag\n"
    "W = float(root.get(\"width\"))\n"
    "G = \"gr\\u00fc\\u00dfe_\\u03bb (model.py)\"\n"
    "frames = [(\"all\", 21, 0), (\"process 1000 python train.py\", 18, 1),\n"
    "          (\"process 2000\", 3, 1), (\"<module> (train.py:10)\", 13, 2),\n"
    "          (\"worker_loop (train.py:40)\", 5, 2), (\"train (train.py:20)\","
    " 9, 3),\n"
    "          (\"Model.step (model.py:5)\", 6, 4), (G, 3, 4),\n"
    "          (\"a;b<&>\\\"' (weird.py:7)\", 4, 3), (\"multi line (weird.py:8)"
    "\", 4, 4),\n"
    "          (G, 5, 3), (\"<module> (train.py:10)\", 3, 2),\n"
    "          (\"train (train.py:20)\", 3, 3), (\"Model.step (model.py:5)\", 3"
    ", 4)]\n"
    "total = 21\n"
    "gs = [g for g in root.iter(S + \"g\") if g.get(\"class\") == \"f\"]\n"
    "assert len(gs) == len(frames), len(gs)\n"
    "rects = [g.find(S + \"rect\") for g in gs]\n"
    "titles = [g.find(S + \"title\") for g in gs]\n"
    "texts = [g.find(S + \"text\") for g in gs]\n"
    "assert None not in rects and None not in titles and None not in texts\n"
    "assert len(list(root.iter(S + \"title\"))) == len(frames)\n"
    "want = sorted(\"%s: %d sample%s, %.2f%%\" % (l, n, \"\" if n == 1 else \"s"
    "\",\n"
    "                                          100.0 * n / total)\n"
    "              for l, n, _ in frames)\n"
    "got = sorted(t.text for t in titles)\n"
    "assert got == want, (got, want)\n"
    "boxes = []\n"
    "for g, r, t in zip(gs, rects, texts):\n"
    "    label = g.get(\"data-l\")\n"
    "    assert t.get(\"x\") is not None\n"
    "    x, y, w = float(r.get(\"x\")), float(r.get(\"y\")), float(r.get(\"widt"
    "h\"))\n"
    "    boxes.append((label, x, y, w))\n"
    "    txt = t.text or \"\"\n"
    "    assert len(txt) * 7.08 <= w - 6 + 1e-6, (label, txt, w)\n"
    "    if txt.endswith(\"..\"):\n"
    "        assert label.startswith(txt[:-2]), (label, txt)\n"
    "    elif txt:\n"
    "        assert txt == label, (label, txt)\n"
    "    assert r.get(\"fill\").startswith(\"rgb(\"), r.get(\"fill\")\n"
    "alls = [b for b in boxes if b[0] == \"all\"]\n"
    "assert len(alls) == 1\n"
    "_, ax, ay, aw = alls[0]\n"
    "assert abs(aw - (W - 20)) < 0.01 and abs(ax - 10) < 0.01\n"
    "assert ay == max(b[2] for b in boxes), \"root is not at the bottom\"\n"
    "seen = sorted((l, round((ay - y) / 16), round(w * total / aw))\n"
    "              for l, x, y, w in boxes)\n"
    "assert seen == sorted((l, dep, n) for l, n, dep in frames), seen\n"
    "for l, x, y, w in boxes:\n"
    "    if l == \"all\":\n"
    "        continue\n"
    "    parents = [b for b in boxes if abs(b[2] - (y + 16)) < 0.01 and\n"
    "               b[1] - 0.01 <= x and x + w <= b[1] + b[3] + 0.01]\n"
    "    assert len(parents) == 1, (l, parents)\n"
    "scripts = list(root.iter(S + \"script\"))\n"
    "assert len(scripts) == 1 and \"zoom\" in scripts[0].text\n"
    "assert scripts[0].get(\"src\") is None and scripts[0].get(\"href\") is Non"
    "e\n"
    "for el in root.iter():\n"
    "    for k, v in el.attrib.items():\n"
    "        assert \"href\" not in k, (el.tag, k)\n"
    "        assert \"://\" not in v or el.tag == S + \"svg\", (el.tag, k, v)\n"
    "print(\"svg ok: %d frames\" % len(gs))\n";

static const char py_png[] =
    "# Decodes a PNG (8-bit RGB/RGBA, no interlace) with zlib alone and checks"
    "\n"
    "# that it shows a flame graph: several colors, and warm frame pixels.\n"
    "import struct, sys, zlib\n"
    "data = open(sys.argv[1], \"rb\").read()\n"
    "assert data[:8] == b\"\\x89PNG\\r\\n\\x1a\\n\", \"not a PNG\"\n"
    "pos, idat, ihdr = 8, b\"\", None\n"
    "while pos < len(data):\n"
    "    n, typ = struct.unpack(\">I4s\", data[pos:pos + 8])\n"
    "    body = data[pos + 8:pos + 8 + n]\n"
    "    pos += 12 + n\n"
    "    if typ == b\"IHDR\":\n"
    "        ihdr = struct.unpack(\">IIBBBBB\", body)\n"
    "    elif typ == b\"IDAT\":\n"
    "        idat += body\n"
    "    elif typ == b\"IEND\":\n"
    "        break\n"
    "w, h, depth, ctype, _, _, interlace = ihdr\n"
    "assert depth == 8 and interlace == 0 and ctype in (2, 6), ihdr\n"
    "bpp = 3 if ctype == 2 else 4\n"
    "raw = zlib.decompress(idat)\n"
    "stride = w * bpp\n"
    "prev = bytearray(stride)\n"
    "colors, warm, i = set(), 0, 0\n"
    "for y in range(h):\n"
    "    ft, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])\n"
    "    i += 1 + stride\n"
    "    if ft == 1:\n"
    "        for x in range(bpp, stride):\n"
    "            line[x] = (line[x] + line[x - bpp]) & 255\n"
    "    elif ft == 2:\n"
    "        for x in range(stride):\n"
    "            line[x] = (line[x] + prev[x]) & 255\n"
    "    elif ft == 3:\n"
    "        for x in range(stride):\n"
    "            a = line[x - bpp] if x >= bpp else 0\n"
    "            line[x] = (line[x] + (a + prev[x]) // 2) & 255\n"
    "    elif ft == 4:\n"
    "        for x in range(stride):\n"
    "            a = line[x - bpp] if x >= bpp else 0\n"
    "            b = prev[x]\n"
    "            c = prev[x - bpp] if x >= bpp else 0\n"
    "            p = a + b - c\n"
    "            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)\n"
    "            pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)\n"
    "            line[x] = (line[x] + pr) & 255\n"
    "    for x in range(0, stride, bpp):\n"
    "        px = bytes(line[x:x + 3])\n"
    "        colors.add(px)\n"
    "        if px[0] >= 200 and px[2] <= 60:\n"
    "            warm += 1\n"
    "    prev = line\n"
    "assert len(colors) > 8, \"only %d colors\" % len(colors)\n"
    "assert warm > 1000, \"only %d warm pixels\" % warm\n"
    "print(\"png ok: %dx%d, %d colors, %d warm pixels\" % (w, h, len(colors), w"
    "arm))\n";

static const char py_pprof[] =
    "# Decodes a gzipped profile.proto with `protoc --decode` and checks string"
    "s,\n"
    "# sample types, values, labels and leaf-first stacks.\n"
    "import gzip, subprocess, sys\n"
    "path, protodir = sys.argv[1], sys.argv[2]\n"
    "raw = open(path, \"rb\").read()\n"
    "assert raw[:2] == b\"\\x1f\\x8b\", \"not gzip\"\n"
    "out = subprocess.run([\"protoc\", \"--decode=perftools.profiles.Profile\","
    "\n"
    "                      \"--proto_path=\" + protodir, protodir + \"/profile."
    "proto\"],\n"
    "                     input=gzip.decompress(raw), capture_output=True,\n"
    "                     check=True).stdout.decode(\"utf-8\")\n"
    "\n"
    "def unescape(s):\n"
    "    b, i = bytearray(), 0\n"
    "    simple = {\"n\": 10, \"t\": 9, \"r\": 13, '\"': 34, \"'\": 39, \"\\\\"
    "\": 92,\n"
    "              \"a\": 7, \"b\": 8, \"f\": 12, \"v\": 11}\n"
    "    while i < len(s):\n"
    "        c = s[i]\n"
    "        if c != \"\\\\\":\n"
    "            b += c.encode(\"utf-8\")\n"
    "            i += 1\n"
    "        elif s[i + 1] in \"01234567\":\n"
    "            j = i + 1\n"
    "            while j < len(s) and j < i + 4 and s[j] in \"01234567\":\n"
    "                j += 1\n"
    "            b.append(int(s[i + 1:j], 8))\n"
    "            i = j\n"
    "        elif s[i + 1] == \"x\":\n"
    "            j = i + 2\n"
    "            while j < len(s) and j < i + 4 and s[j] in \"0123456789abcdefA"
    "BCDEF\":\n"
    "                j += 1\n"
    "            b.append(int(s[i + 2:j], 16))\n"
    "            i = j\n"
    "        else:\n"
    "            b.append(simple[s[i + 1]])\n"
    "            i += 2\n"
    "    return b.decode(\"utf-8\")\n"
    "\n"
    "def parse(text):\n"
    "    top = {}\n"
    "    stack = [top]\n"
    "    for line in text.splitlines():\n"
    "        line = line.strip()\n"
    "        if not line:\n"
    "            continue\n"
    "        if line == \"}\":\n"
    "            stack.pop()\n"
    "        elif line.endswith(\"{\"):\n"
    "            d = {}\n"
    "            stack[-1].setdefault(line[:-1].strip(), []).append(d)\n"
    "            stack.append(d)\n"
    "        else:\n"
    "            k, _, v = line.partition(\": \")\n"
    "            if v.startswith('\"'):\n"
    "                v = unescape(v[1:-1])\n"
    "            elif v in (\"true\", \"false\"):\n"
    "                v = v == \"true\"\n"
    "            else:\n"
    "                v = int(v)\n"
    "            stack[-1].setdefault(k, []).append(v)\n"
    "    assert len(stack) == 1\n"
    "    return top\n"
    "\n"
    "p = parse(out)\n"
    "one = lambda d, k, default=0: d.get(k, [default])[0]\n"
    "st = p[\"string_table\"]\n"
    "assert st[0] == \"\", st[0]\n"
    "for s in (\"gr\\u00fc\\u00dfe_\\u03bb\", \"a;b<&>\\\"'\", \"multi\\nline\""
    ", \"worker <&>\",\n"
    "          \"process 1000 python train.py\", \"model.py\", \"samples\", \"c"
    "ount\",\n"
    "          \"cpu\", \"nanoseconds\", \"pid\", \"tid\", \"thread\", \"rank\""
    "):\n"
    "    assert s in st, s\n"
    "assert len(st) == len(set(st)), \"duplicate strings\"\n"
    "vt = lambda d: (st[one(d, \"type\")], st[one(d, \"unit\")])\n"
    "assert [vt(t) for t in p[\"sample_type\"]] == [(\"samples\", \"count\"),\n"
    "                                            (\"cpu\", \"nanoseconds\")]\n"
    "assert vt(p[\"period_type\"][0]) == (\"cpu\", \"nanoseconds\")\n"
    "assert one(p, \"period\") == 10000000\n"
    "assert st[one(p, \"default_sample_type\")] == \"cpu\"\n"
    "assert one(p, \"time_nanos\") > 0 and one(p, \"duration_nanos\") == 220000"
    "000\n"
    "funcs = {one(f, \"id\"): f for f in p[\"function\"]}\n"
    "assert len(funcs) == 9 == len(p[\"function\"])\n"
    "locs = {}\n"
    "for l in p[\"location\"]:\n"
    "    assert len(l[\"line\"]) == 1, l\n"
    "    ln = l[\"line\"][0]\n"
    "    f = funcs[one(ln, \"function_id\")]\n"
    "    locs[one(l, \"id\")] = (st[one(f, \"name\")], st[one(f, \"filename\")]"
    ",\n"
    "                          one(ln, \"line\"))\n"
    "assert len(locs) == 9 == len(p[\"location\"])\n"
    "assert 0 not in locs\n"
    "samples = p[\"sample\"]\n"
    "assert sum(s[\"value\"][0] for s in samples) == 21\n"
    "assert sum(s[\"value\"][1] for s in samples) == 216000000\n"
    "got = {}\n"
    "for s in samples:\n"
    "    assert len(s[\"value\"]) == 2\n"
    "    labels = {}\n"
    "    for l in s[\"label\"]:\n"
    "        k = st[one(l, \"key\")]\n"
    "        assert k not in labels\n"
    "        labels[k] = st[one(l, \"str\")] if k == \"thread\" else one(l, \"n"
    "um\")\n"
    "    stack = tuple(locs[i][0] for i in s[\"location_id\"])\n"
    "    key = (labels[\"tid\"], stack)\n"
    "    assert key not in got\n"
    "    got[key] = (tuple(s[\"value\"]), labels)\n"
    "R0 = \"process 1000 python train.py\"\n"
    "G = \"gr\\u00fc\\u00dfe_\\u03bb\"\n"
    "MS = 1000000\n"
    "L0 = {\"pid\": 1000, \"rank\": 0, \"local_rank\": 0, \"world_size\": 2}\n"
    "L1 = {\"pid\": 2000, \"rank\": 1, \"world_size\": 2}\n"
    "lab = lambda base, tid, name: dict(base, tid=tid, thread=name)\n"
    "want = {\n"
    "    (1000, (\"Model.step\", \"train\", \"<module>\", R0)):\n"
    "        ((6, 60 * MS), lab(L0, 1000, \"MainThread\")),\n"
    "    (1000, (G, \"train\", \"<module>\", R0)):\n"
    "        ((2, 20 * MS), lab(L0, 1000, \"MainThread\")),\n"
    "    (1000, (\"multi\\nline\", \"a;b<&>\\\"'\", \"<module>\", R0)):\n"
    "        ((4, 40 * MS), lab(L0, 1000, \"MainThread\")),\n"
    "    (1001, (G, \"worker_loop\", R0)): ((5, 50 * MS), lab(L0, 1001, \"worke"
    "r <&>\")),\n"
    "    (1001, (G, \"train\", \"<module>\", R0)):\n"
    "        ((1, 10 * MS), lab(L0, 1001, \"worker <&>\")),\n"
    "    (2000, (\"Model.step\", \"train\", \"<module>\", \"process 2000\")):\n"
    "        ((3, 36 * MS), lab(L1, 2000, \"MainThread\")),\n"
    "}\n"
    "assert got == want, got\n"
    "assert (\"Model.step\", \"model.py\", 5) in locs.values()\n"
    "assert (G, \"model.py\", 0) in locs.values()\n"
    "assert (R0, \"\", 0) in locs.values()\n"
    "comments = [st[i] for i in p.get(\"comment\", [])]\n"
    "assert any(\"pid 2000: pid 2000 [rank 1/2]\" == c for c in comments), comm"
    "ents\n"
    "print(\"pprof ok: %d samples, %d locations, %d strings\" %\n"
    "      (len(samples), len(locs), len(st)))\n";

static const char py_empty[] =
    "# Checks every format's output for a profile without samples.\n"
    "import gzip, json, subprocess, sys\n"
    "import xml.etree.ElementTree as ET\n"
    "d = sys.argv[1]\n"
    "assert open(d + \"/e.folded\", \"rb\").read() == b\"\"\n"
    "s = json.load(open(d + \"/e.speedscope.json\", encoding=\"utf-8\"))\n"
    "assert len(s[\"profiles\"]) == 1 and s[\"profiles\"][0][\"samples\"] == []"
    "\n"
    "c = json.load(open(d + \"/e.trace.json\", encoding=\"utf-8\"))\n"
    "assert [e for e in c[\"traceEvents\"] if e[\"ph\"] == \"X\"] == []\n"
    "assert len([e for e in c[\"traceEvents\"] if e[\"ph\"] == \"M\"]) == 2\n"
    "S = \"{http://www.w3.org/2000/svg}\"\n"
    "root = ET.parse(d + \"/e.svg\").getroot()\n"
    "gs = [g for g in root.iter(S + \"g\") if g.get(\"class\") == \"f\"]\n"
    "assert len(gs) == 1 and gs[0].find(S + \"title\").text == \"all: 0 samples"
    ", 0.00%\"\n"
    "out = subprocess.run([\"protoc\", \"--decode=perftools.profiles.Profile\","
    "\n"
    "                      \"--proto_path=\" + sys.argv[2],\n"
    "                      sys.argv[2] + \"/profile.proto\"],\n"
    "                     input=gzip.decompress(open(d + \"/e.pb.gz\", \"rb\")."
    "read()),\n"
    "                     capture_output=True, check=True).stdout.decode()\n"
    "assert \"sample {\" not in out and 'string_table: \"cpu\"' in out, out\n"
    "print(\"empty ok\")\n";

static const char py_large[] =
    "# Checks every format's output for a large random profile: totals agree\n"
    "# with what the C side generated, and each file parses.\n"
    "import gzip, json, subprocess, sys\n"
    "from decimal import Decimal\n"
    "import xml.etree.ElementTree as ET\n"
    "d, n, weight, protodir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), "
    "\\\n"
    "    sys.argv[4]\n"
    "total = 0\n"
    "for line in open(d + \"/l.folded\", encoding=\"utf-8\"):\n"
    "    stack, _, count = line.rstrip(\"\\n\").rpartition(\" \")\n"
    "    assert stack and all(stack.split(\";\")), line\n"
    "    total += int(count)\n"
    "assert total == n, (total, n)\n"
    "s = json.load(open(d + \"/l.speedscope.json\", encoding=\"utf-8\"))\n"
    "nf = len(s[\"shared\"][\"frames\"])\n"
    "assert sum(sum(w for st, w in zip(p[\"samples\"], p[\"weights\"]) if st)\n"
    "           for p in s[\"profiles\"]) == weight\n"
    "for p in s[\"profiles\"]:\n"
    "    assert len(p[\"samples\"]) == len(p[\"weights\"])\n"
    "    assert all(0 <= i < nf for st in p[\"samples\"] for i in st)\n"
    "c = json.load(open(d + \"/l.trace.json\", encoding=\"utf-8\"),\n"
    "              parse_float=Decimal)\n"
    "threads = {}\n"
    "for e in c[\"traceEvents\"]:\n"
    "    if e[\"ph\"] == \"X\":\n"
    "        threads.setdefault((e[\"pid\"], e[\"tid\"]), []).append(e)\n"
    "assert len(threads) == 4\n"
    "for es in threads.values():\n"
    "    open_ = []\n"
    "    for e in sorted(es, key=lambda e: (e[\"ts\"], -e[\"dur\"])):\n"
    "        while open_ and open_[-1][\"ts\"] + open_[-1][\"dur\"] <= e[\"ts\""
    "]:\n"
    "            open_.pop()\n"
    "        if open_:\n"
    "            top = open_[-1]\n"
    "            assert e[\"ts\"] + e[\"dur\"] <= top[\"ts\"] + top[\"dur\"], ("
    "e, top)\n"
    "        open_.append(e)\n"
    "S = \"{http://www.w3.org/2000/svg}\"\n"
    "root = ET.parse(d + \"/l.svg\").getroot()\n"
    "titles = [g.find(S + \"title\").text for g in root.iter(S + \"g\")\n"
    "          if g.get(\"class\") == \"f\"]\n"
    "assert \"all: %d samples, 100.00%%\" % n in titles\n"
    "out = subprocess.run([\"protoc\", \"--decode=perftools.profiles.Profile\","
    "\n"
    "                      \"--proto_path=\" + protodir, protodir + \"/profile."
    "proto\"],\n"
    "                     input=gzip.decompress(open(d + \"/l.pb.gz\", \"rb\")."
    "read()),\n"
    "                     capture_output=True, check=True).stdout.decode()\n"
    "values = [int(l.split(\":\")[1]) for l in out.splitlines()\n"
    "          if l.strip().startswith(\"value:\")]\n"
    "assert sum(values[0::2]) == n and sum(values[1::2]) == weight\n"
    "print(\"large ok: %d samples, %d frames, %d svg frames, %d trace threads\""
    " %\n"
    "      (n, nf, len(titles), len(threads)))\n";

/* Appended to a flame graph by output_flamegraph_script. */
static const char js_probe[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "/* Test probe: clicks a frame, searches, resets, and reports on the root. "
    "*/\n"
    "(function () {\n"
    "  var gs = document.getElementsByClassName('f'), z = null, r = [], i;\n"
    "  var click = function (el) {\n"
    "    el.dispatchEvent(new MouseEvent('click', {bubbles: true}));\n"
    "  };\n"
    "  var width = function (g) {\n"
    "    return g.getElementsByTagName('rect')[0].getAttribute('width');\n"
    "  };\n"
    "  var count = function (sel) {\n"
    "    return document.querySelectorAll(sel).length;\n"
    "  };\n"
    "  for (i = 0; i < gs.length && !z; i++)\n"
    "    if (gs[i].getAttribute('data-l') === 'train (train.py:20)')\n"
    "      z = gs[i];\n"
    "  click(z);\n"
    "  r.push('w=' + width(z), 'hidden=' + count('g.f.hide'),\n"
    "         'parents=' + count('g.f.parent'),\n"
    "         'unzoom=' + "
    "document.getElementById('unzoom').getAttribute('class'));\n"
    "  window.prompt = function () { return 'gr.*e'; };\n"
    "  click(document.getElementById('search'));\n"
    "  r.push('matched=' + document.getElementById('matched').textContent);\n"
    "  click(document.getElementById('unzoom'));\n"
    "  r.push('after=' + width(z), 'hidden=' + count('g.f.hide'));\n"
    "  document.documentElement.setAttribute('data-test', r.join(';'));\n"
    "})();\n"
    "]]></script>\n";

/* ---- helpers ---- */

#define MS 1000000ULL
/* "grüße_λ" in UTF-8. */
#define GRUSS                                                                  \
  "gr\xc3\xbc\xc3\x9f"                                                         \
  "e_\xce\xbb"

static char tmpdir[64];

static void make_tmpdir(void) {
  ASSERT_EQ(test_scratch(tmpdir, sizeof(tmpdir), "output"), 0);
}

static void rm_tmpdir(void) { test_rmrf(tmpdir); }

static char *tmp_path(const char *name) {
  static char buf[4][256];
  static int next;
  char *p = buf[next++ % 4];

  snprintf(p, sizeof(buf[0]), "%s/%s", tmpdir, name);
  return p;
}

/* Entries of a directory, "." and ".." aside. */
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;

  ASSERT(d != NULL);
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

static int have(const char *prog) {
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
  return system(cmd) == 0;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ASSERT(f != NULL);
  ASSERT(fputs(text, f) >= 0);
  ASSERT(fclose(f) == 0);
}

static char *read_file(const char *path) {
  static char buf[1 << 16];
  FILE *f = fopen(path, "r");
  size_t n;

  ASSERT(f != NULL);
  n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Runs python3 on script with args; its output goes to stderr. Returns
 * its exit status (-1 if it did not exit). */
static int run_py(const char *script, const char *args) {
  char cmd[1024];
  int st;

  write_file(tmp_path("check.py"), script);
  snprintf(cmd, sizeof(cmd), "python3 %s %s 1>&2", tmp_path("check.py"), args);
  st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *proto_dir(void) {
  static char dir[512];
  snprintf(dir, sizeof(dir), "%s/proto", test_srcdir());
  return dir;
}

/* The profile all format tests write: see the scripts for what each
 * format must show of it.
 *   thread 1000 MainThread (pid 1000): A x3, B x2, A, C x4, gap, A x2
 *   thread 1001 "worker <&>" (pid 1000): D x5, B
 *   thread 2000 MainThread (pid 2000): E x3 (12 ms samples)
 * Samples are 10 ms apart unless noted. */
static struct pst__profile *make_profile(void) {
  static const struct pst__prof_frame root0 = {"process 1000 python train.py",
                                               "", 0};
  static const struct pst__prof_frame root1 = {"process 2000", "", 0};
  static const struct pst__prof_frame module = {"<module>", "train.py", 10};
  static const struct pst__prof_frame train = {"train", "train.py", 20};
  static const struct pst__prof_frame step = {"Model.step", "model.py", 5};
  static const struct pst__prof_frame gruss = {GRUSS, "model.py", 0};
  static const struct pst__prof_frame weird = {"a;b<&>\"'", "weird.py", 7};
  static const struct pst__prof_frame multi = {"multi\nline", "weird.py", 8};
  static const struct pst__prof_frame worker = {"worker_loop", "train.py", 40};
  const struct pst__prof_frame a[] = {root0, module, train, step};
  const struct pst__prof_frame b[] = {root0, module, train, gruss};
  const struct pst__prof_frame c[] = {root0, module, weird, multi};
  const struct pst__prof_frame d[] = {root0, worker, gruss};
  const struct pst__prof_frame e[] = {root1, module, train, step};
  struct pst__profile *p = pst__profile_new(10 * MS);
  int p0, p1, t0, t1, t2;

  ASSERT(p != NULL);
  p0 = pst__profile_process(p, 1000, "python train.py --epochs 3", 0, 0, 2);
  p1 = pst__profile_process(p, 2000, "", 1, -1, 2);
  ASSERT(p0 == 0 && p1 == 1);
  t0 = pst__profile_thread(p, 0, 1000, "MainThread");
  t1 = pst__profile_thread(p, 0, 1001, "worker <&>");
  t2 = pst__profile_thread(p, 1, 2000, "MainThread");
  ASSERT(t0 == 0 && t1 == 1 && t2 == 2);
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(pst__profile_add(p, 0, a, 4, (uint64_t)i * 10 * MS, 10 * MS), 0);
  for (int i = 3; i < 5; i++)
    ASSERT_EQ(pst__profile_add(p, 0, b, 4, (uint64_t)i * 10 * MS, 10 * MS), 0);
  ASSERT_EQ(pst__profile_add(p, 0, a, 4, 50 * MS, 10 * MS), 0);
  for (int i = 6; i < 10; i++)
    ASSERT_EQ(pst__profile_add(p, 0, c, 4, (uint64_t)i * 10 * MS, 10 * MS), 0);
  for (int i = 20; i < 22; i++)
    ASSERT_EQ(pst__profile_add(p, 0, a, 4, (uint64_t)i * 10 * MS, 10 * MS), 0);
  for (int i = 0; i < 5; i++)
    ASSERT_EQ(
        pst__profile_add(p, 1, d, 3, (5 + (uint64_t)i * 10) * MS, 10 * MS), 0);
  ASSERT_EQ(pst__profile_add(p, 1, b, 4, 55 * MS, 10 * MS), 0);
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(pst__profile_add(p, 2, e, 4, (uint64_t)i * 10 * MS, 12 * MS), 0);
  ASSERT_EQ(pst__profile_samples(p), 21);
  return p;
}

/* Writes make_profile() with the named writer to tmpdir/name and runs
 * script on it (extra args after the file name). */
static void check_format(const char *writer, const char *file,
                         const char *script, const char *extra) {
  const struct pst__writer_ops *w = pst__writer_find(writer);
  struct pst__profile *p;
  char args[768];

  if (!have("python3"))
    SKIP("python3 not found");
  ASSERT(w != NULL);
  make_tmpdir();
  p = make_profile();
  ASSERT_EQ(pst__writer_save(w, p, tmp_path(file)), 0);
  snprintf(args, sizeof(args), "%s %s", tmp_path(file), extra ? extra : "");
  ASSERT_EQ(run_py(script, args), 0);
  pst__profile_free(p);
  rm_tmpdir();
}

/* ---- tests ---- */

TEST_IMPL(output_registry) {
  static const char *const names[] = {"folded", "speedscope", "chrome",
                                      "flamegraph", "pprof"};
  const struct pst__writer_ops *const *list = pst__writer_list();
  size_t n = 0;

  for (; list[n]; n++) {
    ASSERT(n < 5);
    ASSERT_STR_EQ(list[n]->name, names[n]);
    ASSERT(list[n]->ext[0] == '.' && list[n]->desc[0] && list[n]->write);
    ASSERT(pst__writer_find(names[n]) == list[n]);
    ASSERT(pst__writer_find(list[n]->ext) == list[n]);
    ASSERT(pst__writer_find(list[n]->ext + 1) == list[n]);
  }
  ASSERT_EQ(n, 5);
  ASSERT(pst__writer_find("svg") == &pst__writer_flamegraph);
  ASSERT(pst__writer_find("pb.gz") == &pst__writer_pprof);
  ASSERT(pst__writer_find("nope") == NULL);
  ASSERT(pst__writer_find("") == NULL);
  ASSERT(pst__writer_find(NULL) == NULL);
  return 0;
}

/* The JSON writer's escapes, numbers and separators, byte for byte. */
TEST_IMPL(output_json_writer) {
  struct pst__json j;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);

  ASSERT(f != NULL);
  pst__json_init(&j, f);
  pst__json_object_begin(&j);
  pst__json_kv_string(&j, "s",
                      "q\"b\\s/\n\t\x01\x1f\x7f " GRUSS " \xe2\x82\xac");
  pst__json_kv_string(&j, "4", "\xf0\x9f\x94\xa5");
  /* Ill-formed: a stray byte, a truncated sequence, a surrogate, an
   * overlong '/'. */
  pst__json_kv_string(&j, "bad", "a\xff|\xc3(|\xed\xa0\x80|\xc0\xaf");
  pst__json_key(&j, "n");
  pst__json_array_begin(&j);
  pst__json_int(&j, -5);
  pst__json_uint(&j, UINT64_MAX);
  pst__json_fixed(&j, 1500, 3);
  pst__json_fixed(&j, 7, 3);
  pst__json_fixed(&j, 42000, 3);
  pst__json_bool(&j, 1);
  pst__json_null(&j);
  pst__json_array_begin(&j);
  pst__json_array_end(&j);
  pst__json_object_begin(&j);
  pst__json_object_end(&j);
  pst__json_array_end(&j);
  pst__json_object_end(&j);
  ASSERT_EQ(pst__json_finish(&j), 0);
  fclose(f);
  ASSERT_STR_EQ(buf, "{\"s\":\"q\\\"b\\\\s/\\n\\t\\u0001\\u001f\x7f " GRUSS
                     " \xe2\x82\xac\",\"4\":\"\xf0\x9f\x94\xa5\","
                     "\"bad\":\"a\\ufffd|\\ufffd(|\\ufffd\\ufffd\\ufffd|"
                     "\\ufffd\\ufffd\","
                     "\"n\":[-5,18446744073709551615,1.5,0.007,42,true,null,\n"
                     "[],\n{}]}\n");
  free(buf);

  /* Misuse is reported at the end. */
  f = open_memstream(&buf, &len);
  pst__json_init(&j, f);
  pst__json_object_begin(&j);
  pst__json_string(&j, "value without a key");
  pst__json_object_end(&j);
  ASSERT_EQ(pst__json_finish(&j), -EINVAL);
  pst__json_init(&j, f);
  pst__json_array_begin(&j);
  ASSERT_EQ(pst__json_finish(&j), -EINVAL);
  fclose(f);
  free(buf);
  return 0;
}

/* pst__json_put_string() (dump --json writes through it): any bytes in,
 * valid JSON and valid UTF-8 out. Each ill-formed byte becomes one U+FFFD;
 * well-formed sequences, DEL included, pass through. */
TEST_IMPL(output_json_strings) {
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"plain", "\"plain\""},
      {"", "\"\""},
      {NULL, "\"\""},
      /* A thread name set with prctl(PR_SET_NAME) from arbitrary bytes. */
      {"\xff\xfe"
       "bad",
       "\"\\ufffd\\ufffdbad\""},
      /* Truncated sequences, at the end and before ASCII; a lone
       * continuation byte. */
      {"a\xe2\x82", "\"a\\ufffd\\ufffd\""},
      {"\xf0\x9f\x94"
       "x",
       "\"\\ufffd\\ufffd\\ufffdx\""},
      {"\x80"
       "y",
       "\"\\ufffdy\""},
      /* Overlong encodings of '/' (2, 3, 4 bytes) and of NUL. */
      {"\xc0\xaf", "\"\\ufffd\\ufffd\""},
      {"\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\""},
      {"\xf0\x80\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},
      {"\xc0\x80", "\"\\ufffd\\ufffd\""},
      /* UTF-16 surrogates (high, low) and beyond U+10FFFF. */
      {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},
      {"\xed\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\""},
      {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},
      {"\xf5\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},
      /* The largest of each length, and U+FFFD itself, pass through. */
      {"\x7f\xdf\xbf\xef\xbf\xbf\xf4\x8f\xbf\xbf\xef\xbf\xbd",
       "\"\x7f\xdf\xbf\xef\xbf\xbf\xf4\x8f\xbf\xbf\xef\xbf\xbd\""},
      {"\xed\x9f\xbf\xee\x80\x80", "\"\xed\x9f\xbf\xee\x80\x80\""},
      /* Control characters: short escapes where JSON has them. */
      {"\x01\b\t\n\x0b\f\r\x1b\x1f ",
       "\"\\u0001\\b\\t\\n\\u000b\\f\\r\\u001b\\u001f \""},
      {"q\"b\\s/", "\"q\\\"b\\\\s/\""},
  };

  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    ASSERT(f != NULL);
    pst__json_put_string(f, cases[i].in);
    ASSERT_EQ(fclose(f), 0);
    if (strcmp(buf, cases[i].out))
      TEST_FAIL("case %zu: got %s, want %s", i, buf, cases[i].out);
    free(buf);
  }
  return 0;
}

TEST_IMPL(output_folded) {
  check_format("folded", "out.folded", py_folded, NULL);
  return 0;
}

TEST_IMPL(output_speedscope) {
  check_format("speedscope", "out.speedscope.json", py_speedscope, NULL);
  return 0;
}

TEST_IMPL(output_chrome) {
  check_format("chrome", "out.trace.json", py_chrome, NULL);
  return 0;
}

TEST_IMPL(output_flamegraph) {
  check_format("flamegraph", "out.svg", py_svg, NULL);
  return 0;
}

TEST_IMPL(output_pprof) {
  if (!have("protoc"))
    SKIP("protoc not found (Debian package protobuf-compiler)");
  check_format("pprof", "out.pb.gz", py_pprof, proto_dir());
  return 0;
}

/* Runs headless Chromium on tmpdir/svg with the extra arguments (its
 * output to tmpdir/chromium.out); returns its exit status. */
static int run_chromium(const char *args, const char *svg) {
  char cmd[2048], profile_dir[300];

  snprintf(profile_dir, sizeof(profile_dir), "%s", tmp_path("chromium"));
  if (access(profile_dir, F_OK))
    ASSERT_EQ(mkdir(profile_dir, 0700), 0);
  snprintf(cmd, sizeof(cmd),
           "timeout 90 /usr/bin/chromium --headless --no-sandbox "
           "--disable-gpu --disable-quic --no-first-run "
           "--disable-background-networking --disable-component-update "
           "--disable-sync --hide-scrollbars --user-data-dir=%s "
           "--window-size=1200,800 %s file://%s >%s 2>%s",
           profile_dir, args, tmp_path(svg), tmp_path("chromium.out"),
           tmp_path("chromium.log"));
  return system(cmd);
}

/* Headless Chromium renders the flame graph into a PNG that shows frames. */
TEST_IMPL(output_flamegraph_chromium) {
  struct pst__profile *p;
  char args[300];

  if (access("/usr/bin/chromium", X_OK))
    SKIP("/usr/bin/chromium not found (Debian package chromium)");
  if (!have("python3"))
    SKIP("python3 not found");
  make_tmpdir();
  p = make_profile();
  ASSERT_EQ(pst__writer_save(&pst__writer_flamegraph, p, tmp_path("fg.svg")),
            0);
  snprintf(args, sizeof(args), "--screenshot=%s", tmp_path("fg.png"));
  if (run_chromium(args, "fg.svg") || access(tmp_path("fg.png"), R_OK)) {
    fprintf(stderr, "%s\n", read_file(tmp_path("chromium.log")));
    TEST_FAIL("chromium did not produce a screenshot");
  }
  ASSERT_EQ(run_py(py_png, tmp_path("fg.png")), 0);
  pst__profile_free(p);
  rm_tmpdir();
  return 0;
}

/* The flame graph's script, run by Chromium: a click zooms into a frame
 * (full width, its ancestors dimmed, the others hidden, "Reset Zoom"
 * shown), the search marks matches and gives their share of samples, and
 * "Reset Zoom" restores the layout. A probe script appended to the SVG
 * drives it and reports on the root element, read back with --dump-dom. */
TEST_IMPL(output_flamegraph_script) {
  static const char want[] = "data-test=\"w=1180.000;hidden=8;parents=3;"
                             "unzoom=btn;matched=Matched: 38.10% (2 frames);"
                             "after=505.714;hidden=0\"";
  struct pst__profile *p;
  char *svg, *end, *dom;
  FILE *f;

  if (access("/usr/bin/chromium", X_OK))
    SKIP("/usr/bin/chromium not found (Debian package chromium)");
  make_tmpdir();
  p = make_profile();
  ASSERT_EQ(pst__writer_save(&pst__writer_flamegraph, p, tmp_path("fg.svg")),
            0);
  svg = read_file(tmp_path("fg.svg"));
  end = strstr(svg, "</svg>");
  ASSERT(end != NULL);
  f = fopen(tmp_path("probe.svg"), "w");
  ASSERT(f != NULL);
  fwrite(svg, 1, (size_t)(end - svg), f);
  fputs(js_probe, f);
  fputs("</svg>\n", f);
  ASSERT_EQ(fclose(f), 0);
  if (run_chromium("--dump-dom", "probe.svg")) {
    fprintf(stderr, "%s\n", read_file(tmp_path("chromium.log")));
    TEST_FAIL("chromium --dump-dom failed");
  }
  dom = read_file(tmp_path("chromium.out"));
  if (!strstr(dom, want)) {
    fprintf(stderr, "%s\n",
            strstr(dom, "data-test") ? strstr(dom, "data-test")
                                     : "no data-test");
    TEST_FAIL("the flame graph's script did not behave");
  }
  pst__profile_free(p);
  rm_tmpdir();
  return 0;
}

/* Every format writes something valid for a profile without samples. */
TEST_IMPL(output_empty_profile) {
  static const char *const files[] = {"e.folded", "e.speedscope.json",
                                      "e.trace.json", "e.svg", "e.pb.gz"};
  const struct pst__writer_ops *const *w = pst__writer_list();
  struct pst__profile *p = pst__profile_new(MS);
  char args[768];

  if (!have("python3") || !have("protoc"))
    SKIP("python3 or protoc not found");
  ASSERT(p != NULL);
  ASSERT_EQ(pst__profile_process(p, 7, "idle", -1, -1, -1), 0);
  ASSERT_EQ(pst__profile_thread(p, 0, 7, "MainThread"), 0);
  make_tmpdir();
  for (int i = 0; w[i]; i++)
    ASSERT_EQ(pst__writer_save(w[i], p, tmp_path(files[i])), 0);
  snprintf(args, sizeof(args), "%s %s", tmpdir, proto_dir());
  ASSERT_EQ(run_py(py_empty, args), 0);
  pst__profile_free(p);
  rm_tmpdir();
  return 0;
}

/* A larger random profile (fixed seed): 3000 frames, deep stacks sharing
 * prefixes, 4 threads in 2 processes, runs of repeated stacks. Exercises
 * the writers' tables past their first growth. */
#define LARGE_SAMPLES 8000

static struct pst__profile *make_large(uint64_t *weight) {
  struct pst__profile *p = pst__profile_new(10 * MS);
  static char names[3000][32], files[50][16];
  struct pst__prof_frame frames[3000], stacks[4][64];
  size_t depth[4] = {0};
  uint64_t now[4] = {0}, seed = 42;

  ASSERT(p != NULL);
  for (int i = 0; i < 50; i++)
    snprintf(files[i], sizeof(files[i]), "mod_%d.py", i);
  for (int i = 0; i < 3000; i++) {
    snprintf(names[i], sizeof(names[i]), i % 7 ? "fn_%d" : "f<&>;%d\xce\xbb",
             i);
    frames[i] = (struct pst__prof_frame){names[i], files[i % 50], i % 300};
  }
  ASSERT_EQ(pst__profile_process(p, 10, "large a", 0, 0, 2), 0);
  ASSERT_EQ(pst__profile_process(p, 20, "large b", 1, 1, 2), 1);
  for (int t = 0; t < 4; t++)
    ASSERT_EQ(pst__profile_thread(p, (uint32_t)t / 2, 100 + t, "worker"), t);
  *weight = 0;
  for (int i = 0; i < LARGE_SAMPLES; i++) {
    int t;
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    t = (int)(seed >> 60) % 4;
    if (!depth[t] || (seed >> 40) % 2) { /* else: repeat the last stack */
      uint32_t f = (uint32_t)(seed >> 33) % 8;
      depth[t] = 1 + (seed >> 20) % 60;
      stacks[t][0] = frames[t / 2];
      for (size_t d = 1; d < depth[t]; d++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        f = (f * 31 + (uint32_t)(seed >> 61)) % 3000;
        stacks[t][d] = frames[f];
      }
    }
    now[t] += 10 * MS + (seed >> 50) % 1000;
    ASSERT_EQ(
        pst__profile_add(p, (uint32_t)t, stacks[t], depth[t], now[t], 10 * MS),
        0);
    *weight += 10 * MS;
  }
  return p;
}

TEST_IMPL(output_large_profile) {
  static const char *const files[] = {"l.folded", "l.speedscope.json",
                                      "l.trace.json", "l.svg", "l.pb.gz"};
  const struct pst__writer_ops *const *w = pst__writer_list();
  uint64_t weight;
  struct pst__profile *p;
  char args[768];

  if (!have("python3") || !have("protoc"))
    SKIP("python3 or protoc not found");
  p = make_large(&weight);
  ASSERT_GT(pst__profile_nframes(p), 1024);
  ASSERT_GT(pst__profile_nstacks(p), 1024);
  make_tmpdir();
  for (int i = 0; w[i]; i++)
    ASSERT_EQ(pst__writer_save(w[i], p, tmp_path(files[i])), 0);
  snprintf(args, sizeof(args), "%s %d %" PRIu64 " %s", tmpdir, LARGE_SAMPLES,
           weight, proto_dir());
  ASSERT_EQ(run_py(py_large, args), 0);
  pst__profile_free(p);
  rm_tmpdir();
  return 0;
}

TEST_IMPL(output_save_missing_dir) {
  struct pst__profile *p = make_profile();

  make_tmpdir();
  ASSERT_EQ(pst__writer_save(&pst__writer_folded, p, tmp_path("no/out.folded")),
            -ENOENT);
  ASSERT_EQ(count_entries(tmpdir), 0);
  ASSERT(access(tmp_path("no"), F_OK) != 0 && errno == ENOENT);
  pst__profile_free(p);
  rm_tmpdir();
  return 0;
}

TEST_IMPL(output_save_over_dir) {
  struct pst__profile *p = make_profile();
  struct stat st;
  char path[300];

  make_tmpdir();
  ASSERT_EQ(mkdir(tmp_path("d"), 0755), 0);
  ASSERT_EQ(pst__writer_save(&pst__writer_speedscope, p, tmp_path("d")),
            -EISDIR);
  ASSERT_EQ(stat(tmp_path("d"), &st), 0);
  ASSERT(S_ISDIR(st.st_mode));
  ASSERT_EQ(count_entries(tmp_path("d")), 0);
  ASSERT_EQ(count_entries(tmpdir), 1);
  /* With a trailing slash too, and the temporary directory itself. */
  snprintf(path, sizeof(path), "%s/d/", tmpdir);
  ASSERT_EQ(pst__writer_save(&pst__writer_folded, p, path), -EISDIR);
  ASSERT_EQ(pst__writer_save(&pst__writer_folded, p, tmpdir), -EISDIR);
  ASSERT_EQ(count_entries(tmpdir), 1);
  pst__profile_free(p);
  rm_tmpdir();
  return 0;
}

static int failing_write(const struct pst__profile *p, FILE *f) {
  (void)p;
  fputs("partial output that must never be seen\n", f);
  fflush(f);
  return -EIO;
}

static const struct pst__writer_ops failing_ops = {
    .name = "failing",
    .ext = ".fail",
    .desc = "a writer that fails half-way",
    .write = failing_write,
};

TEST_IMPL(output_save_writer_fails) {
  struct pst__profile *p = make_profile();

  make_tmpdir();
  write_file(tmp_path("out"), "previous content\n");
  ASSERT_EQ(pst__writer_save(&failing_ops, p, tmp_path("out")), -EIO);
  ASSERT_STR_EQ(read_file(tmp_path("out")), "previous content\n");
  ASSERT_EQ(count_entries(tmpdir), 1);
  /* The same into a new name leaves nothing at all. */
  ASSERT_EQ(pst__writer_save(&failing_ops, p, tmp_path("new")), -EIO);
  ASSERT(access(tmp_path("new"), F_OK) != 0);
  ASSERT_EQ(count_entries(tmpdir), 1);
  pst__profile_free(p);
  rm_tmpdir();
  return 0;
}

/* A successful save replaces the file (mode 0644 under umask 022), replaces
 * a symlink rather than writing through it, and leaves no temporary. */
TEST_IMPL(output_save_replaces) {
  struct pst__profile *p = make_profile();
  struct stat st;
  char *text;

  umask(022);
  make_tmpdir();
  write_file(tmp_path("out.folded"), "previous content\n");
  ASSERT_EQ(chmod(tmp_path("out.folded"), 0600), 0);
  ASSERT_EQ(pst__writer_save(&pst__writer_folded, p, tmp_path("out.folded")),
            0);
  text = read_file(tmp_path("out.folded"));
  ASSERT(!strncmp(text, "process 1000 python train.py;", 29));
  ASSERT(strstr(text, "\nprocess 2000;<module> (train.py:10);train "
                      "(train.py:20);Model.step (model.py:5) 3\n"));
  ASSERT_EQ(stat(tmp_path("out.folded"), &st), 0);
  ASSERT_EQ(st.st_mode & 0777, 0644);
  ASSERT_EQ(count_entries(tmpdir), 1);

  write_file(tmp_path("target"), "target content\n");
  ASSERT_EQ(symlink(tmp_path("target"), tmp_path("link")), 0);
  ASSERT_EQ(pst__writer_save(&pst__writer_folded, p, tmp_path("link")), 0);
  ASSERT_EQ(lstat(tmp_path("link"), &st), 0);
  ASSERT(S_ISREG(st.st_mode));
  ASSERT_STR_EQ(read_file(tmp_path("target")), "target content\n");
  ASSERT_EQ(count_entries(tmpdir), 3);
  pst__profile_free(p);
  rm_tmpdir();
  return 0;
}

/* Reads what is waiting in the non-blocking descriptor fd. */
static char *drain(int fd) {
  static char buf[1 << 16];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);

  buf[n > 0 ? n : 0] = '\0';
  return buf;
}

/* The rule of -o (writer.h): our own descriptors by name, special files
 * written into as they are (never a FIFO without its reader, never one
 * another user may have planted), everything else replaced. */
TEST_IMPL(output_save_special) {
  struct pst__profile *p = make_profile();
  char name[64];
  struct stat st;
  int pfd[2], rfd;

  make_tmpdir();
  ASSERT_EQ(pst__writer_own_fd("-"), 1);
  ASSERT_EQ(pst__writer_own_fd("/dev/stdout"), 1);
  ASSERT_EQ(pst__writer_own_fd("/dev/stderr"), 2);
  ASSERT_EQ(pst__writer_own_fd("/proc/self/fd/7"), 7);
  ASSERT_EQ(pst__writer_own_fd("/dev/fd/"), -1);
  ASSERT_EQ(pst__writer_own_fd("/dev/fd/3x"), -1);
  ASSERT_EQ(pst__writer_own_fd("./-"), -1);

  /* A descriptor of ours, by name: written into, no lookup. */
  ASSERT_EQ(pipe2(pfd, O_NONBLOCK | O_CLOEXEC), 0);
  snprintf(name, sizeof(name), "/dev/fd/%d", pfd[1]);
  ASSERT_EQ(pst__writer_where(name), PST_WRITER_OWN_FD);
  ASSERT_EQ(pst__writer_save(&pst__writer_folded, p, name), 0);
  ASSERT(!strncmp(drain(pfd[0]), "process 1000 python train.py;", 29));
  snprintf(name, sizeof(name), "/dev/fd/%d", pfd[0]);
  ASSERT_EQ(pst__writer_where(name), -EBADF);
  close(pfd[0]);
  close(pfd[1]);

  /* A FIFO: nobody reads it, then someone does. */
  ASSERT_EQ(mkfifo(tmp_path("fifo"), 0600), 0);
  ASSERT_EQ(pst__writer_where(tmp_path("fifo")), PST_WRITER_SPECIAL);
  ASSERT_EQ(pst__writer_save(&pst__writer_folded, p, tmp_path("fifo")), -ENXIO);
  rfd = open(tmp_path("fifo"), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(rfd, 0);
  ASSERT_EQ(pst__writer_save(&pst__writer_folded, p, tmp_path("fifo")), 0);
  ASSERT(!strncmp(drain(rfd), "process 1000 python train.py;", 29));
  ASSERT_EQ(lstat(tmp_path("fifo"), &st), 0);
  ASSERT(S_ISFIFO(st.st_mode));

  /* Another user's FIFO in a directory everyone writes to (as /tmp):
   * refused, even with its reader there. */
  if (geteuid() == 0) {
    ASSERT_EQ(chmod(tmpdir, 01777), 0);
    ASSERT_EQ(lchown(tmp_path("fifo"), 65534, 65534), 0);
    ASSERT_EQ(pst__writer_where(tmp_path("fifo")), -EPERM);
    ASSERT_EQ(pst__writer_save(&pst__writer_folded, p, tmp_path("fifo")),
              -EPERM);
    ASSERT_STR_EQ(drain(rfd), "");
    /* A link to it is a link: replaced by the profile. */
    ASSERT_EQ(symlink(tmp_path("fifo"), tmp_path("link")), 0);
    ASSERT_EQ(pst__writer_where(tmp_path("link")), PST_WRITER_FILE);
    ASSERT_EQ(pst__writer_save(&pst__writer_folded, p, tmp_path("link")), 0);
    ASSERT_STR_EQ(drain(rfd), "");
    ASSERT_EQ(lstat(tmp_path("link"), &st), 0);
    ASSERT(S_ISREG(st.st_mode));
  }
  close(rfd);
  pst__profile_free(p);
  rm_tmpdir();
  return 0;
}
