"""The array scans reuse for their scores: lent to one scan at a time, grown when the store grows."""

from __future__ import annotations

import numpy as np

from lodviz import scoring
from lodviz.store.scan_buffer import ScanBuffer


def test_the_same_array_is_lent_again_to_the_next_scan():
    buffer = ScanBuffer()
    with buffer.take(100) as first:
        assert first is not None and len(first) == 100 and first.dtype == np.float32
        first[:] = 1.0
    with buffer.take(80) as second:
        assert second is not None and np.shares_memory(first, second)


def test_a_scan_meanwhile_gets_none_and_makes_its_own():
    buffer = ScanBuffer()
    with buffer.take(10) as held:
        with buffer.take(10) as other:
            assert held is not None and other is None
    with buffer.take(10) as again:
        assert again is not None  # given back when the first scan ended


def test_a_bigger_store_gets_a_bigger_array_with_room_to_grow():
    buffer = ScanBuffer()
    with buffer.take(100) as small:
        pass
    with buffer.take(1000) as big:
        assert big is not None and len(big) == 1000 and not np.shares_memory(small, big)
    with buffer.take(1200) as grown:
        assert grown is not None and np.shares_memory(big, grown)  # 1,000 + a quarter


def test_similarity_into_a_given_array_equals_a_fresh_one():
    rng = np.random.default_rng(0)
    matrix = scoring.normalize_rows(rng.standard_normal((300, 16)).astype(np.float32))
    query = rng.standard_normal(16).astype(np.float32)
    out = np.full(300, np.nan, dtype=np.float32)
    into = scoring.similarity(query, matrix, out=out)
    assert np.shares_memory(into, out)
    assert np.array_equal(into, scoring.similarity(query, matrix))
