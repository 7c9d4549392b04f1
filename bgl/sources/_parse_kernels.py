"""numba kernel that parses edge-list text (``src dst`` per line) from a byte buffer.

Plain array arguments only; ``bgl.sources.readers.edgelist`` does the I/O and error messages.
"""
from __future__ import annotations

from numba import njit

OK = 0
ERR_MALFORMED = 1  # a token that is not an integer
ERR_MISSING = 2  # a line with only one column
ERR_NEGATIVE = 3
ERR_RANGE = 4  # id >= the declared node count
ERR_OVERFLOW = 5  # more than 18 digits
ERR_WEIGHT = 6  # the weight column is missing or not a decimal number
ERR_RANGE_DST = 7  # destination id >= its declared node count (``dst_limit``)

NL = 10
CR = 13
TAB = 9
SPACE = 32
COMMA = 44
MINUS = 45
PLUS = 43
HASH = 35
PERCENT = 37


@njit(cache=True, nogil=True, inline="always")
def _is_sep(c):
    return c == SPACE or c == TAB or c == CR or c == COMMA


@njit(cache=True, nogil=True, inline="always")
def _next_edge_line(buf, i, n, line):
    """``(i, line)`` at the first character of the next edge line from ``buf[i]`` (``i >= n``: none),
    past leading blanks, blank lines and ``#``/``%`` comment lines; ``line`` counts the lines passed."""
    while i < n:
        while i < n and (buf[i] == SPACE or buf[i] == TAB or buf[i] == CR):
            i += 1
        if i >= n or (buf[i] != NL and buf[i] != HASH and buf[i] != PERCENT):
            break
        while i < n and buf[i] != NL:
            i += 1
        i += 1
        line += 1
    return i, line


@njit(cache=True, nogil=True)
def _parse_number(buf, i, n):
    """A decimal number (``-1.5``, ``2``, ``3e-4``) at ``buf[i]``: ``(value, end, ok)``; ok is False
    unless the token is a whole number followed by a separator or the line end."""
    neg = False
    if i < n and (buf[i] == MINUS or buf[i] == PLUS):
        neg = buf[i] == MINUS
        i += 1
    mant = 0.0
    digits = 0
    while i < n and 48 <= buf[i] <= 57:
        mant = mant * 10.0 + (buf[i] - 48)
        i += 1
        digits += 1
    scale = 0
    if i < n and buf[i] == 46:  # '.'
        i += 1
        while i < n and 48 <= buf[i] <= 57:
            mant = mant * 10.0 + (buf[i] - 48)
            i += 1
            digits += 1
            scale -= 1
    if digits == 0:
        return 0.0, i, False
    if i < n and (buf[i] == 101 or buf[i] == 69):  # 'e' / 'E'
        i += 1
        eneg = False
        if i < n and (buf[i] == MINUS or buf[i] == PLUS):
            eneg = buf[i] == MINUS
            i += 1
        e = 0
        edigits = 0
        while i < n and 48 <= buf[i] <= 57 and edigits < 4:
            e = e * 10 + (buf[i] - 48)
            i += 1
            edigits += 1
        if edigits == 0:
            return 0.0, i, False
        scale += -e if eneg else e
    if i < n and not (_is_sep(buf[i]) or buf[i] == NL):
        return 0.0, i, False
    value = mant * 10.0 ** scale
    return (-value if neg else value), i, True


@njit(cache=True, nogil=True)
def parse_edge_lines(buf, src_out, dst_out, id_limit, weight_col, w_out, dst_limit=-1):
    """Parse ``buf`` (uint8, ends with ``\\n``) into ``src_out``/``dst_out`` (int64).

    Blank lines and lines starting with ``#`` or ``%`` are skipped; columns are
    separated by spaces, tabs or commas; columns after the second (weights,
    timestamps) are ignored, except column ``weight_col`` (0-based, >= 2) when it is
    given: its decimal number goes to ``w_out`` (float64), one per edge.
    ``id_limit`` > 0 rejects ids >= it (ERR_RANGE); ``dst_limit`` >= 0 sets the destination
    column's own limit (a typed edge list's two ends count different node types; 0 = none),
    reported as ERR_RANGE_DST; without it both columns share ``id_limit`` and ERR_RANGE.

    Returns
    -------
    (num_edges, num_lines, err_code, err_line, err_value): on error, parsing
    stops and ``err_line`` is the 0-based line in ``buf``; ``err_value`` is the
    offending id for ERR_NEGATIVE / ERR_RANGE.
    """
    n = buf.shape[0]
    i = 0
    line = 0
    ne = 0
    dst_code = ERR_RANGE_DST
    if dst_limit < 0:
        dst_limit = id_limit
        dst_code = ERR_RANGE
    while i < n:
        i, line = _next_edge_line(buf, i, n, line)
        if i >= n:
            break
        s = 0
        d = 0
        for col in range(2):
            if col == 1:
                nsep = 0
                while i < n and _is_sep(buf[i]):
                    i += 1
                    nsep += 1
                if i >= n or buf[i] == NL:
                    return ne, line, ERR_MISSING, line, 0
                if nsep == 0:
                    return ne, line, ERR_MALFORMED, line, 0
            neg = False
            if buf[i] == MINUS:
                neg = True
                i += 1
            elif buf[i] == PLUS:
                i += 1
            start = i
            v = 0
            while i < n and buf[i] >= 48 and buf[i] <= 57:
                v = v * 10 + (buf[i] - 48)
                i += 1
            digits = i - start
            if digits == 0:
                return ne, line, ERR_MALFORMED, line, 0
            if digits > 18:
                return ne, line, ERR_OVERFLOW, line, 0
            if i < n and not (_is_sep(buf[i]) or buf[i] == NL):
                return ne, line, ERR_MALFORMED, line, 0
            if neg:
                if v != 0:
                    return ne, line, ERR_NEGATIVE, line, -v
            if col == 0 and id_limit > 0 and v >= id_limit:
                return ne, line, ERR_RANGE, line, v
            if col == 1 and dst_limit > 0 and v >= dst_limit:
                return ne, line, dst_code, line, v
            if col == 0:
                s = v
            else:
                d = v
        if weight_col >= 2:
            for _ in range(weight_col - 1):  # skip to the start of column weight_col
                while i < n and _is_sep(buf[i]):
                    i += 1
                if i >= n or buf[i] == NL:
                    return ne, line, ERR_WEIGHT, line, 0
                if _ < weight_col - 2:
                    while i < n and not (_is_sep(buf[i]) or buf[i] == NL):
                        i += 1
            value, i, ok = _parse_number(buf, i, n)
            if not ok:
                return ne, line, ERR_WEIGHT, line, 0
            w_out[ne] = value
        src_out[ne] = s
        dst_out[ne] = d
        ne += 1
        # extra columns are ignored up to the end of the line
        while i < n and buf[i] != NL:
            i += 1
        i += 1
        line += 1
    return ne, line, OK, -1, 0


@njit(cache=True, nogil=True)
def parse_int_column(buf, col, out):
    """``out[k]`` = the integer in column ``col`` (0-based, >= 2) of the k-th edge line of ``buf``.

    Edge lines are the lines :func:`parse_edge_lines` reads as edges (not blank, not ``#``/``%``
    comments), tokens split the same way, so ``out[k]`` belongs to its k-th edge.  Used for an
    edge list's timestamp column (int64, e.g. unix seconds), which a float64 weight would round.

    Returns
    -------
    (count, err_line): ``err_line`` -1, or the 0-based line whose column is missing or not an
    integer of at most 18 digits.
    """
    n = buf.shape[0]
    i = 0
    line = 0
    k = 0
    while i < n:
        i, line = _next_edge_line(buf, i, n, line)
        if i >= n:
            break
        for _ in range(col):  # past `col` tokens and their separators
            while i < n and not (_is_sep(buf[i]) or buf[i] == NL):
                i += 1
            while i < n and _is_sep(buf[i]):
                i += 1
            if i >= n or buf[i] == NL:
                return k, line
        neg = False
        if buf[i] == MINUS or buf[i] == PLUS:
            neg = buf[i] == MINUS
            i += 1
        v = 0
        start = i
        while i < n and 48 <= buf[i] <= 57:
            v = v * 10 + (buf[i] - 48)
            i += 1
        if i == start or i - start > 18 or (i < n and not (_is_sep(buf[i]) or buf[i] == NL)):
            return k, line
        out[k] = -v if neg else v
        k += 1
        while i < n and buf[i] != NL:
            i += 1
        i += 1
        line += 1
    return k, -1
