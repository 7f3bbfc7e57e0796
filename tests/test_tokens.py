"""Checking a token does the same work whatever the token, so a refusal's time says nothing about its id."""

from __future__ import annotations

import hmac

import pytest

from lodviz import access
from lodviz.errors import Unauthenticated


@pytest.fixture
def counted(mem, monkeypatch):
    """The store with one live token, and a tally of the work each check does."""
    record, token = mem.create_token("vera", "viewer", actor="test")
    calls = {"table": 0, "hash": 0, "compare": 0}
    lookup, hash_, compare = mem._store.tokens, access.digest, hmac.compare_digest

    def count(name, fn):
        def call(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return call

    monkeypatch.setattr(mem._store, "tokens", count("table", lookup))
    monkeypatch.setattr(access, "digest", count("hash", hash_))
    monkeypatch.setattr(access.hmac, "compare_digest", count("compare", compare))
    return mem, record, token, calls


@pytest.mark.parametrize("kind", ["not shaped like a token", "an unknown id", "a known id with a wrong secret", "nothing"])
def test_a_refused_token_costs_one_read_of_the_token_table_one_hash_and_one_comparison(counted, kind):
    mem, record, _, calls = counted
    token = {"not shaped like a token": "hello", "an unknown id": "lvz_0badc0de_" + "x" * 43,
             "a known id with a wrong secret": f"lvz_{record.id}_" + "x" * 43, "nothing": None}[kind]
    with pytest.raises(Unauthenticated):
        mem.authenticate(token)
    assert calls == {"table": 1, "hash": 1, "compare": 1}


def test_a_valid_token_costs_the_same_work(counted):
    mem, record, token, calls = counted
    assert mem.authenticate(token).name == "vera"
    assert calls == {"table": 1, "hash": 1, "compare": 1}
