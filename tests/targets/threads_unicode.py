# threads_unicode.py: a thread parked in a function with a non-ASCII name
# (imported by threads.py on Python 3 only).
import time

report = None


def grüße_λ():
    report("unicode")
    time.sleep(3600)  # @park:unicode


def entry():
    grüße_λ()
