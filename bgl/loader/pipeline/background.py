"""Run an epoch's producer chain in one background thread, a few items ahead of the trainer.

Why a thread: a batch served by graph servers spends much of its time
waiting, not computing: a sampling round trip per layer and a feature round
trip, each queued behind the other trainers' requests at a 1-thread server
(profiled on Slashdot, 2 trainers, 2 servers, 2 cores: 4-16 ms per trip, while
the model step takes 30-45 ms).  Inline, the trainer sits idle through every
wait.  In a thread the waits overlap the model step of the batch before: ZeroMQ
polls, the numba kernels (``nogil``) and torch's ops all release the GIL.
Processes overlap too, but on a 2-core box they cost more than they hide
(each batch crosses a process boundary, and every stage wants a core).

Ownership: the producer generator is created, iterated and closed by the
thread alone, so the stages' sockets and caches are used by one thread at a
time (ZeroMQ sockets are not thread-safe).  Closing the consumer (end of the
loop, ``break``, an exception, Ctrl-C) stops the thread after its current item
and joins it before returning, so the next epoch never shares a socket with a
straggler.  An exception in the producer is raised in the trainer, unchanged
(stage errors already name their stage).
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Iterator

from ...threads import one_openmp_thread_here

# How often a blocked put/get looks at the stop flag and the thread's liveness (s).
POLL_S = 0.05

_ITEM, _END, _ERROR = "item", "end", "error"


def background_items(make_items: Callable[[], Iterator[Any]], queue_size: int,
                     name: str = "bgl-producer") -> Iterator[Any]:
    """The items of ``make_items()``, produced in a daemon thread up to ``queue_size`` ahead.

    ``make_items`` is called in the thread, so the generator it returns is
    created, run and closed there.
    """
    if queue_size < 1:
        raise ValueError(f"queue_size must be >= 1, got {queue_size}")
    q: queue.Queue = queue.Queue(maxsize=queue_size)
    stop = threading.Event()

    def put(msg) -> bool:
        while not stop.is_set():
            try:
                q.put(msg, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            one_openmp_thread_here()  # beside the trainer's threads, not a team of every core (bgl.threads)
            items = make_items()
            try:
                for item in items:
                    if not put((_ITEM, item)):
                        return
                    del item  # not held while the next one is made (the trainer may have dropped it)
            finally:
                items.close()
            put((_END, None))
        except BaseException as e:  # handed to the trainer, which raises it
            put((_ERROR, e))

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    held: list = []  # the item being yielded, popped as it goes: a suspended frame keeps no batch
    try:
        while True:
            try:
                kind, value = q.get(timeout=POLL_S)
            except queue.Empty:
                if not thread.is_alive() and q.empty():
                    raise RuntimeError(f"{name} thread ended without finishing the epoch") from None
                continue
            if kind == _END:
                return
            if kind == _ERROR:
                raise value
            held.append(value)
            del value
            yield held.pop()
    finally:
        stop.set()
        thread.join()  # its current item ends within the sampler's own timeouts
