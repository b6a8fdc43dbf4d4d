# tap.py: TAP output for the integration suites, ending with the summary
# line tests/run.sh adds up: "N passed, M failed, K skipped".
import sys


class Tap(object):
    def __init__(self):
        self.results = []

    def report(self, ok, name, why=""):
        """ok: True, False, or None for a skip (why is the reason)."""
        self.results.append(ok)
        n = len(self.results)
        if ok is None:
            print("ok %d - %s # SKIP %s" % (n, name, why))
        else:
            print("%s %d - %s" % ("ok" if ok else "not ok", n, name))
            if not ok:
                for line in why.splitlines():
                    print("#   " + line)
        sys.stdout.flush()

    def finish(self):
        """Prints the summary; returns the exit status."""
        passed = sum(1 for r in self.results if r)
        failed = sum(1 for r in self.results if r is False)
        skipped = sum(1 for r in self.results if r is None)
        print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
        return 1 if failed else 0
