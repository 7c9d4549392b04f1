"""MkDocs hook: docstrings name code with Sphinx roles (``:class:`~bgl.store.GraphStore```), which
Markdown renders as the role's text followed by the code; show the code alone, as Sphinx would
(``~`` drops the qualifying path, so only the last name remains)."""
from __future__ import annotations

import re

ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|data|attr|exc|obj|ref):<code>(~?)([^<]*)</code>")
# Inside a code span (a parameter's type column) the backticks stay as they are.
RAW_ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|data|attr|exc|obj|ref):`(~?)([^`]*)`")


def _name(match: re.Match) -> str:
    name = match.group(2)
    return name.rsplit(".", 1)[-1] if match.group(1) else name


def on_page_content(html: str, **_) -> str:
    html = ROLE.sub(lambda m: f"<code>{_name(m)}</code>", html)
    return RAW_ROLE.sub(_name, html)
