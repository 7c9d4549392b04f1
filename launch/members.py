"""The processes one launch supervises, and their output re-printed with who printed it.

A :class:`Member` is one started graph server or one host's ``torchrun``,
with what the supervisor tracks about it (ready, done, restarts, health
PINGs).  :class:`OutputPump` copies each member's merged stdout/stderr to the
launcher's output, one line at a time as ``[host:role:rank] line``; a
trainer worker's line, tagged by torchrun with ``[bgl-rank N]:``
(``RANK_PREFIX_TEMPLATE`` in :mod:`bgl.launch.spec`), is named by its global
rank.  One daemon thread per member keeps every pipe drained, so no process
ever blocks on a full pipe, even after the launcher's own stdout went away.
A trainer's lifecycle line (:mod:`bgl.launch.lifecycle`) goes to ``on_event``
instead of the output.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Callable, TextIO

from . import lifecycle
from .backends import Launched
from .spec import ServerPlacement, TrainerPlacement

_RANK_LINE = re.compile(rb"^\[bgl-rank (\d+)\]:")


@dataclass
class Member:
    """One supervised process and what it is, for messages."""

    role: str  # "server" | "trainer"
    what: str  # human description used in failure messages
    prefix: str  # "[host:role:rank]"
    launched: Launched
    placement: ServerPlacement | TrainerPlacement
    reader: threading.Thread | None = None
    ready: bool = False
    done: bool = False
    restart: int = 0  # 0 = first start; n = n-th restart of this server
    restarted_at: float | None = None  # monotonic time its predecessor was found dead
    next_ping: float = 0.0
    last_answer: float = 0.0  # monotonic time of its last answered PING


class OutputPump:
    """Copies each process's merged stdout/stderr to ``sink`` line by line, prefixed."""

    def __init__(self, sink: TextIO, on_event: Callable[[dict], None] | None = None):
        self.sink = sink
        self.on_event = on_event
        self.lock = threading.Lock()
        self.broken = False

    def emit(self, prefix: str, text: str) -> None:
        """Write ``prefix text`` as one line to the sink; stops writing (but never raises) once the
        sink is broken.
        """
        with self.lock:
            if self.broken:
                return
            try:
                self.sink.write(f"{prefix} {text}\n")
                self.sink.flush()
            except (OSError, ValueError):
                # Our stdout went away (`bgl launch | head`): keep draining the pipes so no
                # process blocks on a full pipe, but stop writing.
                self.broken = True

    def start(self, member: Member) -> threading.Thread:
        """Start a daemon thread that copies ``member``'s output to the sink with its prefix; returns
        the thread.
        """
        host = member.launched.host.tag

        def pump() -> None:
            stream = member.launched.popen.stdout
            for raw in iter(stream.readline, b""):
                line = raw.rstrip(b"\r\n")
                prefix = member.prefix
                if member.role == "trainer":
                    m = _RANK_LINE.match(line)
                    if m:  # a worker line tee'd by torchrun: name the global rank
                        prefix = f"[{host}:trainer:{int(m.group(1))}]"
                        line = line[m.end():]
                text = line.decode("utf-8", errors="replace")
                event = lifecycle.parse(text.lstrip()) if member.role == "trainer" and self.on_event else None
                if event is not None:
                    self.on_event(event)
                else:
                    self.emit(prefix, text)
            stream.close()

        thread = threading.Thread(target=pump, name=f"pump {member.prefix}", daemon=True)
        thread.start()
        return thread
