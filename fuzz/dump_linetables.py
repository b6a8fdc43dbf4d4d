# dump_linetables.py: prints the line tables of a few real functions of the
# interpreter running it, one per line: "FORMAT FIRSTLINENO OFFSET HEX" where
# FORMAT is 0 (2.7 lnotab), 1 (3.6-3.9 lnotab), 2 (3.10 linetable) or 3
# (3.11+ location table) and OFFSET one in the middle of the code (bytes,
# or code units for 3.11+). Runs on 2.7 and every 3.x (fuzz/make_seeds.py).
import binascii
import sys
import os
import threading
import json.decoder

v = sys.version_info[:2]
if v < (3, 0):
    fmt = 0
elif v < (3, 10):
    fmt = 1
elif v < (3, 11):
    fmt = 2
else:
    fmt = 3

funcs = [os.walk, threading.Thread.run, json.decoder.JSONDecoder.raw_decode,
         os.makedirs, threading.Condition.wait]
for f in funcs:
    f = getattr(f, "__func__", f)
    c = f.__code__
    tab = c.co_lnotab if fmt < 2 else c.co_linetable
    off = len(c.co_code) // 2
    if fmt == 3:
        off //= 2
    print("%d %d %d %s" % (fmt, c.co_firstlineno, off,
                           binascii.hexlify(tab).decode()))
