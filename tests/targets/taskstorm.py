# taskstorm.py: tasks that keep changing what they await, for the --async
# torn-read test: each task alternates between chains a1 -> b1 -> sleep
# and a2 -> b2 -> sleep (new coroutine objects every time, so freed ones
# are reused at once); a1 over b2 or a2 over b1 is impossible.
import asyncio
import sys


async def b1():
    await asyncio.sleep(0)


async def b2():
    await asyncio.sleep(0)


async def a1():
    await b1()


async def a2():
    await b2()


async def worker():
    while True:
        await a1()
        await a2()


async def main(n):
    for i in range(n):
        asyncio.get_running_loop().create_task(worker(), name="w%d" % i)
    print("ready")
    sys.stdout.flush()
    await asyncio.sleep(3600)


asyncio.run(main(int(sys.argv[1]) if sys.argv[1:] else 50))
