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


def float_above(minimum: float, inclusive: bool = False):
    """An argparse ``type``: a finite float ``> minimum`` (``>=`` when ``inclusive``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if value < minimum or (value == minimum and not inclusive):
            raise argparse.ArgumentTypeError(f"must be {'>=' if inclusive else '>'} {minimum:g}, got {text}")
        return value

    parse.__name__ = f"number {'>=' if inclusive else '>'} {minimum:g}"
    return parse


def tcp_port(text: str) -> int:
    """An argparse ``type``: a TCP port 1..65535 (ZeroMQ and torch would wrap 99999 to 34463)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be in 1..65535, got {value}")
    return value


tcp_port.__name__ = "port"


def show_progress(args) -> bool:
    """Whether a command draws tqdm bars: not with ``--no-progress``, and only when stderr is a
    terminal (in a log file or a pipe a bar is a stream of carriage-return lines, and it would
    precede a failure's one-line error)."""
    import sys

    return not getattr(args, "no_progress", False) and sys.stderr.isatty()
