# parked.py: a target with one thread and a fixed Python stack, for the
# frame-walker replay fixtures (tools/capture-fixtures.sh). Runs on CPython
# 2.7 and 3.x. The stack, innermost first: leaf, Walker.step three times,
# middle, outer, <module>; every frame stands at a line marked
# "# @park:<key>", which the test reads from this file (never from an
# interpreter). Prints "ready" once parked, then sleeps until killed.
# Keep the markers' functions and order in step with
# tests/unit/test-frame-replay.c.
import sys
import time


def leaf():
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        time.sleep(3600)  # @park:leaf


class Walker(object):
    def step(self, n):
        if n > 1:
            return self.step(n - 1)  # @park:step-call
        return leaf()  # @park:step-leaf


def middle(k):
    return Walker().step(k)  # @park:middle


def outer():
    return middle(3)  # @park:outer


outer()  # @park:module
