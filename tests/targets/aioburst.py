# aioburst.py: a short asyncio program for the figures tests: argv[1]
# (default 0.6) seconds of unnamed request-like tasks, each spinning a
# little in handle() then awaiting, 50 at a time, then it exits.
import asyncio
import sys
import time

LIFE = float(sys.argv[1]) if len(sys.argv) > 1 else 0.6


async def handle(i):
    end = time.time() + 0.002
    while time.time() < end:
        pass
    await asyncio.sleep(0)


async def main():
    end = time.time() + LIFE
    i = 0
    while time.time() < end:
        await asyncio.gather(*(handle(i + k) for k in range(50)))
        i += 50


asyncio.run(main())
