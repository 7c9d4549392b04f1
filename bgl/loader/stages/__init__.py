"""The loader's stages and what travels between them.

``order`` is the source stage (an epoch's seed order, cut into batches; ``order_prefetch`` guesses
the next epoch's); ``map`` holds the map stages (sample, fetch), ``transfer`` the trainer's, each built
from a picklable spec (``specs``) and keeping the contract of ``protocol``; a batch travels as a
``minibatch.MiniBatch``.  The fetch stage's helpers sit beside it: ``row_buffers``,
``remote_rows``, ``prefault``, ``presample`` (GNNLab's cache choice), ``temporal_blocks``.
"""
