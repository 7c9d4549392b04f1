"""The training scripts ``bgl demo`` launches (run as files: ``python examples/train_sage.py``).

Installed as ``bgl.examples`` so that ``bgl demo`` runs from an installed wheel too, not only from a
source checkout.
"""
