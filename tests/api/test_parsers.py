"""The JSON depth check (twin/api/parsers.py) counts what Python's parser would recurse into: brackets outside
strings, with escaped quotes and runs of backslashes inside them."""
import json
import random

from twin.api.parsers import json_depth


def depth(value) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


def random_document(rng, level=0):
    text = lambda: "".join(rng.choice('ab\\"[]{}') for _ in range(rng.randrange(6)))  # noqa: E731
    r = rng.random()
    if level > 12 or r < 0.3:
        return text()
    if r < 0.65:
        return [random_document(rng, level + 1) for _ in range(rng.randrange(4))]
    return {text(): random_document(rng, level + 1) for _ in range(rng.randrange(4))}


def test_the_depth_is_the_documents_on_random_documents_with_tricky_strings():
    rng = random.Random(11)
    for _ in range(2000):
        doc = random_document(rng)
        raw = json.dumps(doc).encode()
        assert json_depth(raw) == depth(doc), raw


def test_edge_cases():
    assert json_depth(b"") == json_depth(b"1") == json_depth(b'"[[["') == 0
    assert json_depth(b'["\\"", [[1]]]') == 3          # an escaped quote does not end the string
    assert json_depth(b'["\\\\", [[1]]]') == 3         # an escaped backslash does not escape the quote
    assert json_depth(b"[" * 100_000) == 100_000
