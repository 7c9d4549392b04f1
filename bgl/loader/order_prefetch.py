"""Building the next epoch's order while this epoch runs, keyed by a guessed seed.

The proximity order is a BFS over the whole graph (~1 s on R-MAT 2^20), and a
shuffle a permutation of every seed (0.45 s for 9.5M seed edges), so an inline
or thread loader starts the next epoch's in a background thread once the first
batch of this one exists.  Its seed is the one the next ``iter()`` will most
likely draw from torch's RNG; the guess is right unless the training loop draws
from torch's RNG itself (dropout, ...).  A wrong guess only wastes CPU (orders are
keyed by their seed), and after two in a row the loader stops guessing.
"""
from __future__ import annotations

import logging
from typing import Callable, Iterator, Optional

import torch

log = logging.getLogger(__name__)


def peek_torch_seed() -> int:
    """The seed ``torch.randint(0, 2**62, (1,))`` would draw next, leaving torch's RNG as it was."""
    state = torch.get_rng_state()
    try:
        return int(torch.randint(0, 2**62, (1,)).item())
    finally:
        torch.set_rng_state(state)


class NextOrderGuess:
    """Tracks the guesses; ``prefetching`` wraps an epoch's items."""

    def __init__(self):
        self.enabled = True
        self._guessed: Optional[int] = None
        self._misses = 0

    def prefetching(self, items: Iterator, seed: int, start_next: Callable[[], int]) -> Iterator:
        """``items``; after the first one, ``start_next()`` starts the next order and returns its seed.

        ``seed`` is the seed this epoch actually drew, compared with the last guess.
        """
        if self._guessed is not None:
            # One miss happens when code between epochs draws from torch's RNG once (building
            # the model after a warm-up epoch); only repeated misses mean the loop itself draws.
            self._misses = 0 if self._guessed == seed else self._misses + 1
            if self._misses >= 2:
                self.enabled = False
                log.info("next-epoch order guessed wrong twice in a row (the training loop "
                         "draws from torch's RNG); orders are built on demand from now on")
        self._guessed = None
        try:
            for i, item in enumerate(items):
                if i == 0 and self.enabled:
                    self._guessed = start_next()
                yield item
        finally:
            items.close()
