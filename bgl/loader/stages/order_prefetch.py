"""Building the next epoch's order while this epoch runs, keyed by a guessed seed.

The proximity order is a BFS over the whole graph (~1 s on R-MAT 2^20), and a
shuffle a permutation of every seed (0.45 s for 9.5M seed edges), so an inline
or thread loader starts the next epoch's in a background thread once the first
batch of this one exists.  Its seed is the next epoch number's (epoch seeds come from
the loader's own generator, :mod:`bgl.loader.state.position`); the guess is wrong only
when ``set_epoch`` jumps elsewhere.  A wrong guess only wastes CPU (orders are
keyed by their seed), and after two in a row the loader stops guessing.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

log = logging.getLogger(__name__)


class NextOrderGuess:
    """Tracks the guesses: :meth:`begin` at each epoch, :meth:`after_first` for its pipeline."""

    def __init__(self):
        self.enabled = True
        self._guessed: Optional[int] = None
        self._misses = 0

    def begin(self, seed: int) -> None:
        """An epoch starts with ``seed``, the seed it actually drew: compared with the last guess."""
        if self._guessed is not None:
            # One miss happens when set_epoch jumps once (a warm-up epoch); only repeated
            # misses mean the loop keeps choosing epochs out of order.
            self._misses = 0 if self._guessed == seed else self._misses + 1
            if self._misses >= 2:
                self.enabled = False
                log.info("next-epoch order guessed wrong twice in a row (set_epoch jumps); "
                         "orders are built on demand from now on")
        self._guessed = None

    def after_first(self, start_next: Callable[[], int]) -> Callable[[], None]:
        """What the pipeline calls once the epoch's first item exists (its order is built by then):
        ``start_next()`` starts the next order and returns the seed it guessed."""
        def start() -> None:
            if self.enabled:
                self._guessed = start_next()
        return start
