"""The API's JSON parser, refusing what would make a server error instead of a 400 naming the body: JSON nested
deeper than TWIN_API_MAX_JSON_DEPTH (Python's parser recurses, and 100,000 ``[`` overflow the stack).

The depth is measured before parsing, on the bytes, in numpy: a quote preceded by an odd run of backslashes is
escaped; the others open and close strings; brackets outside strings nest.
"""
from __future__ import annotations

import io

import numpy as np
from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

QUOTE, BACKSLASH = ord('"'), ord("\\")
OPENERS, CLOSERS = (ord("["), ord("{")), (ord("]"), ord("}"))


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in the JSON text ``raw`` (0 for a scalar). Works on the positions
    of the few bytes that matter (quotes, backslashes, brackets), not on every byte."""
    a = np.frombuffer(raw, np.uint8)
    backslashes = np.flatnonzero(a == BACKSLASH)
    quotes = np.flatnonzero(a == QUOTE)
    if backslashes.size and quotes.size:
        # the run of backslashes ending at each backslash: its position minus the start of its run, plus one
        starts = np.ones(backslashes.size, bool)
        starts[1:] = np.diff(backslashes) != 1
        run_start = np.maximum.accumulate(np.where(starts, backslashes, 0))
        k = np.searchsorted(backslashes, quotes - 1)
        k_ok = np.minimum(k, backslashes.size - 1)
        before = (k < backslashes.size) & (backslashes[k_ok] == quotes - 1)
        escaped = before & ((backslashes[k_ok] - run_start[k_ok] + 1) % 2 == 1)
        quotes = quotes[~escaped]
    brackets = np.flatnonzero((a == OPENERS[0]) | (a == OPENERS[1]) | (a == CLOSERS[0]) | (a == CLOSERS[1]))
    brackets = brackets[np.searchsorted(quotes, brackets) % 2 == 0]     # an even number of quotes before: outside
    kind = a[brackets]
    step = np.where((kind == OPENERS[0]) | (kind == OPENERS[1]), 1, -1)
    return int(np.cumsum(step).max(initial=0))


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        limit = settings.TWIN_API_MAX_JSON_DEPTH
        depth = json_depth(raw)
        if depth > limit:
            raise ParseError(f"JSON body nested {depth} levels deep, over the limit of {limit} "
                             "(TWIN_API_MAX_JSON_DEPTH)")
        try:
            return super().parse(io.BytesIO(raw), media_type, parser_context)
        except RecursionError:      # not expected after the depth check: still a 400, never a 500
            raise ParseError(f"JSON body nested too deeply (TWIN_API_MAX_JSON_DEPTH {limit})") from None
