# taskhot.py: one asyncio task computing without pause (it yields once per
# 200000 additions) beside 5 idle ones, for the --async test that the task
# running on its thread is sampled, not left out as moving while read.
# Prints "ready" once its tasks are created.
import asyncio
import sys


async def idle():
    await asyncio.sleep(3600)


async def spin():
    x = 0
    while True:
        for i in range(200000):
            x += i
        await asyncio.sleep(0)


async def main():
    loop = asyncio.get_running_loop()
    for i in range(5):
        loop.create_task(idle(), name="idle-%d" % i)
    hot = loop.create_task(spin(), name="hot")
    print("ready")
    sys.stdout.flush()
    await hot


asyncio.run(main())
