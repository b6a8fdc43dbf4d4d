# aiochain.py: asyncio tasks whose running coroutine calls down, for the
# figures tests: Task "one" runs c1 -> deep (a plain function that spins),
# Task "two" runs c2 -> c3 -> deep; each yields to the loop between calls.
# Prints "ready" once both run. 3.7+.
import asyncio
import sys
import time


def deep():
    end = time.time() + 0.002
    while time.time() < end:
        pass


async def c1():
    while True:
        deep()
        await asyncio.sleep(0)


async def c3():
    while True:
        deep()
        await asyncio.sleep(0)


async def c2():
    await c3()


async def main():
    loop = asyncio.get_event_loop()
    one = loop.create_task(c1())
    two = loop.create_task(c2())
    one.set_name("one") if hasattr(one, "set_name") else None
    two.set_name("two") if hasattr(two, "set_name") else None
    await asyncio.sleep(0.1)
    print("ready")
    sys.stdout.flush()
    await asyncio.gather(one, two)


asyncio.run(main())
