"""MkDocs hook: the CLI reference page holds every ``bgl`` sub-command's ``--help``, made at build time.

The page (``api/cli.md``) carries the marker ``<!-- bgl-cli-reference -->``; this hook replaces it
with one section per command, the help text argparse prints (``bgl.cli.build_parser``, the parser the
command itself runs, so the page cannot disagree with the command).  The text is formatted 100
columns wide whatever the terminal, so a build is the same everywhere.
"""
from __future__ import annotations

import argparse
import functools

MARKER = "<!-- bgl-cli-reference -->"
WIDTH = 100


def help_text(parser: argparse.ArgumentParser) -> str:
    """``parser``'s ``--help`` at :data:`WIDTH` columns."""
    formatter = parser.formatter_class
    parser.formatter_class = functools.partial(formatter, width=WIDTH)
    try:
        return parser.format_help().rstrip()
    finally:
        parser.formatter_class = formatter


def commands() -> list[tuple[str, argparse.ArgumentParser]]:
    """``[(command line, parser)]``: ``bgl``, each sub-command, and ``bgl partition import-distdgl``."""
    from bgl.cli import build_parser
    from bgl.commands.import_distdgl import SUBCOMMAND, build_parser as import_parser

    top = build_parser()
    (sub,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    out = [("bgl", top)]
    for name, parser in sub.choices.items():
        out.append((f"bgl {name}", parser))
        if name == "partition":
            out.append((f"bgl partition {SUBCOMMAND}", import_parser("bgl partition")))
    return out


def reference() -> str:
    sections = []
    for line, parser in commands():
        sections.append(f"## `{line}`\n\n```text\n{help_text(parser)}\n```\n")
    return "\n".join(sections)


def on_page_markdown(markdown: str, page, **_) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, reference())
