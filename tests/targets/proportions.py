# proportions.py: one thread spends 60%, 30% and 10% of its time in three
# functions, by the length of their busy loops (measured here, not assumed):
# each round calls heavy/medium/light with iteration counts 6:3:1.
# Prints "ready", runs until killed.
from __future__ import print_function
import sys


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def heavy():
    return spin(60000)


def medium():
    return spin(30000)


def light():
    return spin(10000)


print("ready")
sys.stdout.flush()
while True:
    heavy()
    medium()
    light()
