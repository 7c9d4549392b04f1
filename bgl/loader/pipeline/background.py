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

The first item is made in the trainer's own thread, before the producer
starts: the trainer could only wait for it anyway, and made here it costs what
the inline pipeline's first batch costs (1.0 ms against 3.6 ms through a fresh
thread, 262k-edge R-MAT graph, DGL blocks, unshuffled).

Ownership: after that first item the producer generator is iterated and closed
by the thread alone (handed over at the thread's start, a full memory barrier,
as ZeroMQ requires to move a socket between threads), so the stages' sockets
and caches are used by one thread at a time (ZeroMQ sockets are not
thread-safe).  Closing the consumer (end of the
loop, ``break``, an exception, Ctrl-C) stops the thread after its current item
and joins it before returning, so the next epoch never shares a socket with a
straggler.  An exception in the producer is raised in the trainer, unchanged
(stage errors already name their stage).

The hand-off: when the trainer is already blocked on the queue, the producer
puts the item and then waits (at most ``HANDOFF_S``) until the trainer has
taken it.  Without that, the trainer, woken by the put, still needs the GIL,
which the producer keeps while it goes on building the next item in Python;
CPython makes the waiter wait a whole switch interval (5 ms) before it forces
a switch.  A loader's first batch took 4.7-5.0 ms this way against 2.2 ms
inline (262k-edge R-MAT graph, DGL blocks; 3.0 ms with a 0.2 ms switch
interval), and every batch the trainer waits for paid the same.

Large batches, one ahead: when ``one_ahead()`` says the batches are large (the loader's rule:
feature rows of ``ONE_AHEAD_BYTES`` or more a batch, :meth:`~bgl.loader.pipeline.chain.Pipeline.
large_batches`), the producer makes the next item only once the trainer has taken the one queued,
so at most two batches are alive (the trainer's and the next), as in DGL's loop, which builds
the next batch while its loop still holds the last.  Measured on PubMed with 8,192-dim features
and DGL's example sampler (``prefetch_node_feats=["feat"]``, 144 MB of rows a batch): with two
queued, bgl's peak RSS was 1.20x DGL's; the overlap needs only one, since making a batch takes a
fraction of its model step.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Iterator, Optional

from ...threads import launch_pools_here, lower_thread_priority, one_openmp_thread_here, start_daemon_thread

# How often a blocked put/get looks at the stop flag and the thread's liveness (s).
POLL_S = 0.05
# The longest a producer waits for a blocked trainer to take the item it just put (s): CPython's
# default switch interval, so a hand-off never costs more than the convoy it avoids.
HANDOFF_S = 0.005
# One batch ahead (large batches): how long the producer, once the trainer took the queued batch, lets
# the trainer run before it makes the next one (s).  Woken with the batch, the trainer needs the GIL to
# start its step, which the producer would hold while it begins the next batch in Python.  Measured on
# PubMed 8,192-dim (144 MB of rows a batch, 4 runs each, alternating): the trainer waited 34.5-35.5 ms a
# batch with it against 36.2-42.4 ms without; peak RSS the same (1,612-1,620 against 1,611-1,618 MiB).
REBIND_S = 0.001

_ITEM, _END, _ERROR = "item", "end", "error"


def background_items(make_items: Callable[[], Iterator[Any]], queue_size: int,
                     name: str = "bgl-producer", after_first: Optional[Callable[[], None]] = None,
                     nice: int = 0, one_ahead: Optional[Callable[[], bool]] = None) -> Iterator[Any]:
    """The items of ``make_items()``, produced in a daemon thread up to ``queue_size`` ahead.

    ``make_items`` is called, and its first item made, in the caller's thread; the thread runs the
    generator from the second item on and closes it.  ``after_first()`` runs in the thread, first,
    at the caller's priority (a thread it starts inherits it): the loader's next-epoch order (an epoch
    seed, then a small shuffle made at once or a thread started for a big one) is off the trainer's
    way to its first batch, which it cost 0.33 ms there (10k seeds, against a whole first batch of
    3-5 ms on a 262k-edge graph); an error it raises reaches the trainer as the producer's do.
    ``nice``: how many nice levels below the caller the thread runs (``bgl.threads.lower_thread_priority``;
    0 keeps the caller's priority).  ``one_ahead()``, asked in the thread after each item is queued: True
    holds the next item back until the trainer has taken that one (module docstring).
    """
    if queue_size < 1:
        raise ValueError(f"queue_size must be >= 1, got {queue_size}")
    q: queue.Queue = queue.Queue(maxsize=queue_size)
    stop = threading.Event()
    trainer_blocked = threading.Event()  # the trainer is waiting on an empty queue
    taken = threading.Event()  # the trainer has taken an item since the producer last cleared it

    def put(msg) -> bool:
        taken.clear()  # a stale "taken" from an earlier item must not cut the next hand-off short
        while not stop.is_set():
            try:
                q.put(msg, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def hand_off() -> None:
        """Let a trainer blocked on the queue take the item just put before going on (module docstring).
        Called holding no item: the trainer may drop its batch and expect it freed meanwhile."""
        if trainer_blocked.is_set():
            taken.wait(HANDOFF_S)  # blocks without the GIL: the trainer runs on at once

    def wait_drained() -> bool:
        """True once the queue is empty (the trainer took what was put) and the trainer has had
        ``REBIND_S`` to drop its batch before that one; False once the epoch is stopped (no next item)."""
        while not stop.is_set():
            taken.clear()  # before the check: a take after it sets the event again
            if q.empty():
                # the trainer, woken with the item, still holds the batch before it until its loop
                # rebinds its variables, which needs the GIL this thread would keep while it samples
                time.sleep(REBIND_S)
                return True
            taken.wait(POLL_S)
        return False

    def produce(items: Iterator[Any]) -> None:
        try:
            try:
                one_openmp_thread_here()  # beside the trainer's threads, not a team of every core (bgl.threads)
                if after_first is not None:
                    after_first()  # before the priority drops: a thread it starts inherits this one's
                lower_thread_priority(nice)  # the trainer's threads first when both are ready (bgl.threads)
                for item in items:
                    if not put((_ITEM, item)):
                        return
                    del item  # not held while the next one is made (the trainer may have dropped it)
                    hand_off()
                    if one_ahead is not None and one_ahead() and not wait_drained():
                        return
            finally:
                items.close()
            put((_END, None))
        except BaseException as e:  # handed to the trainer, which raises it
            put((_ERROR, e))

    items = make_items()
    try:
        first = next(items)  # here: the trainer would only wait for the thread to make it
    except StopIteration:
        return
    except BaseException:
        items.close()
        raise
    if nice:
        launch_pools_here()  # before the producer lowers its priority: no pool inherits it
    thread = start_daemon_thread(produce, (items,), name)  # the generator is the thread's alone from here on
    del items
    held: list = [first]  # the item being yielded, popped as it goes: a suspended frame keeps no batch
    del first
    try:
        yield held.pop()
        while True:
            try:
                kind, value = q.get_nowait()
            except queue.Empty:
                trainer_blocked.set()
                try:
                    kind, value = q.get(timeout=POLL_S)
                except queue.Empty:
                    if not thread.is_alive() and q.empty():
                        raise RuntimeError(f"{name} thread ended without finishing the epoch") from None
                    continue
                finally:
                    trainer_blocked.clear()
            taken.set()
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
