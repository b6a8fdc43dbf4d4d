# tasks.py: an asyncio program of 20 tasks that all wait, for the --async
# tests: nested gathers, a TaskGroup (before 3.11, which has none, a gather
# of 3 tasks), tasks awaiting other tasks, one in asyncio.sleep, one in a
# socket read. Once every task waits, a loop callback (no task runs then:
# the state a profiler sees) prints, as one JSON line "tasks [...]", what
# the program itself sees through asyncio.all_tasks() and
# Task.get_stack(): each task's name, its own coroutine frame (function,
# line), the name of the task it awaits if any, and the names of the tasks
# awaiting it: _asyncio_awaited_by (3.14+), or before 3.14, which keeps no
# such list, what rebuilds it from what a task awaits (rules(), given too
# on 3.14+, where it must agree); then "ready". Nothing moves after that.
# With the argument "uvloop", on uvloop's loop (prints "no uvloop" and
# exits when it cannot be imported).
import asyncio
import json
import socket
import sys
import types


async def sleeper():
    await asyncio.sleep(3600)


async def sock_reader(sock):
    loop = asyncio.get_running_loop()
    await loop.sock_recv(sock, 1)


async def leaf(i):
    await asyncio.sleep(3600 + i)


async def inner_gather(k):
    await asyncio.gather(*(leaf(10 * k + j) for j in range(3)))


async def outer_gather():
    await asyncio.gather(inner_gather(1), inner_gather(2))


async def in_group(i):
    await asyncio.sleep(3600 + i)


async def group_owner():
    if sys.version_info < (3, 11):  # no TaskGroup: a gather of 3 tasks
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.create_task(in_group(i), name="group-%d"
                                                % i) for i in range(3)))
        return
    async with asyncio.TaskGroup() as tg:
        for i in range(3):
            tg.create_task(in_group(i), name="group-%d" % i)


async def waits_for(task):
    await task


@types.coroutine
def parked(fut):
    # A plain yield (not an await) with a generator in a local: on 3.11 and
    # 3.12, whose frame state does not tell the two apart, a reader that
    # took what lies at the top of the frame for what it awaits would
    # follow the decoy.
    decoy = (x for x in ())
    fut._asyncio_future_blocking = True  # what Future.__await__ does
    yield fut
    return decoy


def rules(loop):
    """{task: names of the tasks awaiting it}: the task a task waits on
    (await task), the children of the gather a task waits on, the parent
    task of the TaskGroup whose callback a task has."""
    by = {}
    for t in asyncio.all_tasks(loop):
        w = getattr(t, "_fut_waiter", None)
        children = [w] if isinstance(w, asyncio.Task) else \
            getattr(w, "_children", None) or []
        for c in children:
            by.setdefault(c, set()).add(t.get_name())
        for cb, _ in t._callbacks or ():
            p = getattr(getattr(cb, "__self__", None), "_parent_task", None)
            if isinstance(p, asyncio.Task):
                by.setdefault(t, set()).add(p.get_name())
    return by


def snapshot(loop):
    out = []
    by_rules = rules(loop)
    for t in asyncio.all_tasks(loop):
        waiter = getattr(t, "_fut_waiter", None)
        frames = [(f.f_code.co_name, f.f_lineno) for f in t.get_stack()]
        by = getattr(t, "_asyncio_awaited_by", None)
        ruled = sorted(by_rules.get(t, ()))
        out.append({"name": t.get_name(), "frames": frames,
                    "awaits": waiter.get_name()
                    if isinstance(waiter, asyncio.Task) else None,
                    "awaited_by": ruled if by is None and
                    sys.version_info < (3, 14) else sorted(
                        w.get_name() for w in by or ()
                        if isinstance(w, asyncio.Task)),
                    "awaited_by_rules": ruled})
    return out


def report(loop):
    # Until every task waits: main, 4 + 4 chain, 2 inner gathers and their
    # 6 leaves, 3 in the group.
    if len(asyncio.all_tasks(loop)) < 20:
        loop.call_later(0.01, report, loop)
        return
    print("tasks " + json.dumps(snapshot(loop)))
    print("ready")
    sys.stdout.flush()


async def main():
    a, b = socket.socketpair()
    a.setblocking(False)
    tasks = [asyncio.create_task(sleeper(), name="sleeper"),
             asyncio.create_task(sock_reader(a), name="sock-reader"),
             asyncio.create_task(outer_gather(), name="outer-gather"),
             asyncio.create_task(group_owner(), name="group-owner")]
    chain = asyncio.create_task(sleeper(), name="chain-0")
    tasks.append(chain)
    for i in range(1, 4):
        chain = asyncio.create_task(waits_for(chain), name="chain-%d" % i)
        tasks.append(chain)
    loop = asyncio.get_running_loop()
    loop.call_later(0.2, report, loop)
    fut = loop.create_future()
    loop.call_later(3600, fut.set_result, None)
    await parked(fut)


if sys.argv[1:] == ["uvloop"]:
    try:
        import uvloop
    except ImportError:
        print("no uvloop")
        sys.exit(0)
    uvloop.install()
asyncio.run(main())
