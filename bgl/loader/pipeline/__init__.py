"""Running the stages: inline in the trainer, in background threads, or one pinned process each.

``chain.Pipeline`` wires the stages; ``inline`` and ``background`` run them in the trainer's
process; ``stage_process`` is what one stage process runs, forked from a zygote (``spawn``,
``_zygote_warm``); ``resources`` splits the cores between stages; ``epoch_iterator`` is what a
``for batch in loader`` loop holds.
"""
