"""The library refuses what its faces used to guard alone: each a domain error in one sentence, nothing written."""

from __future__ import annotations

import pytest

import lodviz
from lodviz.errors import InvalidInput, InvalidParameters, LodvizError
from lodviz.serve.process import _bind


def test_a_query_that_is_not_utf8_is_refused_before_anything_is_recorded(mem):
    mem.add("The supplier contract caps liability at 2x fees.", agent_id="a")
    before = len(mem.audit(limit=1000))
    with pytest.raises(InvalidInput, match="not valid UTF-8"):
        mem.search("liability \udc9b cap", agent_id="a")
    assert len(mem.audit(limit=1000)) == before


def test_a_hash_model_of_fewer_than_two_dimensions_is_refused(tmp_path):
    with pytest.raises(InvalidParameters, match="at least 2"):
        lodviz.open(tmp_path / "s.duckdb", model="hash:1")


@pytest.mark.parametrize("limit", [-1, 0, 2**63])
def test_an_audit_limit_outside_1_to_bigint_is_refused(mem, limit):
    with pytest.raises(InvalidInput):
        mem.audit(limit=limit)


def test_a_negative_sample_seed_is_refused(mem):
    mem.add("A memory to sample.", agent_id="a")
    with pytest.raises(InvalidInput, match="seed"):
        mem.sample(1, seed=-1)


@pytest.mark.parametrize("port", [-1, 65536])
def test_a_port_outside_0_to_65535_is_refused_in_one_sentence(port):
    with pytest.raises(LodvizError, match="--port"):
        _bind("127.0.0.1", port)
