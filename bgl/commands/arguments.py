"""argparse value types shared by the sub-commands: a bad number is a one-line usage error naming it."""
from __future__ import annotations

import argparse


def int_at_least(minimum: int):
    """An argparse ``type``: an int ``>= minimum`` (``"must be >= 0, got -3"`` otherwise)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    parse.__name__ = f"int >= {minimum}"
    return parse
