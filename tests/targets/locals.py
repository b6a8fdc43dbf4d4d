# -*- coding: utf-8 -*-
# locals.py: threads parked in frames with known local variables, for
# dump --locals. Prints one JSON line with what each parked frame holds
# (as the dump should show it), then "ready"; runs until killed.
from __future__ import print_function
import json
import sys
import threading
import time

PY2 = sys.version_info[0] == 2
ready = threading.Event()


def values(i, neg, big, f, s, b, t, n, d, l, tup, st):
    ready.wait()
    time.sleep(3600)  # @park:values


def deep(depth):
    if depth:
        return deep(depth - 1)
    ready.wait()
    time.sleep(3600)  # @park:deep


def main():
    # Latin-1, a CJK character (2 bytes in UTF-16) and one past the BMP
    # (4 bytes, a surrogate pair in 2.7's narrow builds).
    s = u"h\u00e9llo w\u00f6rld \u6570\U0001F600"
    args = (42, -7, 2 ** 70, 0.5, s, b"ab\x00c", True, None, {1: 2, 3: 4},
            [1, 2, 3], (1,), set([5]))
    threading.Thread(target=values, args=args, name="values").start()
    threading.Thread(target=deep, args=(30,), name="deep").start()
    want = {
        "i": "42", "neg": "-7", "big": "int (more than 64 bits)" if not PY2
        else "long (more than 64 bits)", "f": "0.5",
        "s": (u"u'" if PY2 else u"'") + s + u"'",
        "b": "b'ab\\x00c'", "t": "True", "n": "None", "d": "dict (len 2)",
        "l": "list (len 3)", "tup": "tuple (len 1)", "st": "set (len 1)",
    }
    print(json.dumps(want))
    print("ready")
    sys.stdout.flush()
    ready.set()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
