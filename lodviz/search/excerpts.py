"""Excerpts of a search's long memories: what each passage costs the agent, and the text it reads.

Under a query, a long memory at SUMMARY comes back as its passages nearest the
query, verbatim and in order, with ``…`` where text was left out
(``lodviz.passages.excerpt``), and its headline in front where the budget
leaves room. With a budget, ``plan`` prices the candidates' passages in real
tokens for ``budget.fit_excerpts``, which chooses them passage by passage in
order of relevance; without one, ``unbudgeted`` takes the nearest passages
within the summary's share of the memory's length, headline first. A
passage's cost is kept by memory and offset, since texts never change once
written.

Handed the store and the token counter; part of stages 4 and 5 (``fit``, ``delivery``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lodviz import budget as budgeting
from lodviz import passages as cutting
from lodviz.result import line
from lodviz.scoring import Tier
from lodviz.search import passages
from lodviz.search.passages import Near
from lodviz.store.base import Store
from lodviz.tokens import TokenCounter

HEAD_MARK = " " + cutting.HEAD_MARK


@dataclass
class Plan:
    """The long memories among a fit's candidates: their passages priced, their texts at hand."""

    excerpts: budgeting.Excerpts
    ids: np.ndarray  # per candidate of the fit: its memory id
    rows: np.ndarray  # per passage of ``excerpts``: its row in ``Near``
    near: Near
    headlines: dict[int, str]

    def content(self, i: int, taken: np.ndarray, headed: bool) -> tuple[str, list[tuple[int, int]]]:
        """Candidate ``i``'s excerpt: its text, and the spans it quotes."""
        mine = np.flatnonzero((self.excerpts.item == i) & taken)
        return write(self.near, self.rows[mine], int(self.ids[i]), self.headlines[int(self.ids[i])] if headed else "")


def write(near: Near, rows: np.ndarray, memory_id: int, headline: str) -> tuple[str, list[tuple[int, int]]]:
    """The excerpt of ``memory_id`` quoting ``near``'s passage ``rows``, behind ``headline`` if given."""
    text = near.full[memory_id]
    own = near.of(memory_id)
    spans = [(int(a), int(b)) for a, b in near.spans[own].tolist()]
    chosen = [int(np.flatnonzero(own == r)[0]) for r in rows.tolist()]
    return cutting.excerpt(text, spans, chosen, headline), [spans[c] for c in sorted(chosen)]


def _flat(text: str) -> str:
    return " ".join(text.split())


class Excerpter:
    """Prices long memories' passages for the budget fit and writes the excerpts the agent reads."""

    def __init__(self, store: Store, counter: Callable[[], TokenCounter]) -> None:
        self._store = store
        self._counter = counter
        # Per memory id and passage start: the tokens the passage adds to an excerpt's line.
        self._tokens: dict[tuple[int, int], int] = {}

    def forget(self, memory_id: int) -> None:
        """Drop what a forgotten memory's passages cost."""
        for key in [key for key in self._tokens if key[0] == memory_id]:
            del self._tokens[key]

    def plan(
        self,
        ids: np.ndarray,
        natural: np.ndarray,
        keys: np.ndarray,
        penalty: np.ndarray | None,
        near: Near,
        share: np.ndarray,
        full_share: np.ndarray,
        headlines: dict[int, str],
        budget: int,
    ) -> Plan | None:
        """The passages of the long ones among candidates ``ids`` priced for ``budget.fit_excerpts`` (None: none is long).

        ``share`` is each candidate's summary length and ``full_share`` its full
        length (characters): an excerpt may hold as much of a memory as its tier
        would give it whole.
        """
        if not len(near) or not len(ids):
            return None
        at = {int(m): i for i, m in enumerate(ids.tolist())}
        rows = np.flatnonzero(np.isin(near.owner, ids))
        if not len(rows):
            return None
        item = np.array([at[int(m)] for m in near.owner[rows].tolist()], dtype=np.int64)
        off = penalty[item] if penalty is not None else 0.0
        key = near.similarity[rows] - off
        later = (near.later if near.later is not None else near.similarity)[rows] - off
        # Only as many passages as could fit: each costs at least an eighth of its characters.
        size = (near.spans[rows, 1] - near.spans[rows, 0]).astype(np.int64)
        by_key = np.argsort(-key, kind="stable")
        reach = int(np.searchsorted(np.cumsum(size[by_key] // 8), budget)) + 1
        # A long candidate none of whose passages is within reach is fitted as a short one, with its stored
        # summary: keeping its best passage instead read less on the benchmark's documents (docs/retrieval.md).
        wanted = np.sort(by_key[:reach])
        rows, item, key, later, size = rows[wanted], item[wanted], key[wanted], later[wanted], size[wanted]
        cost = self._passage_tokens(near, rows)
        long = np.unique(item)
        counter = self._counter()
        opening = np.zeros(len(ids), dtype=np.int64)
        heads = np.zeros(len(ids), dtype=np.int64)
        if len(long):
            lines = [line(int(ids[i]), cutting.GAP, False) for i in long.tolist()]
            lines += [_flat(headlines.get(int(ids[i]), "")) + HEAD_MARK for i in long.tolist()]
            counted = counter.count_many(lines).astype(np.int64)
            newline = 1
            opening[long] = counted[: len(long)] + newline
            heads[long] = counted[len(long):] + 1
        limit = np.where(np.asarray(natural) >= Tier.FULL, full_share, share).astype(np.int64)
        excerpts = budgeting.Excerpts(
            item=item, key=key, cost=cost, words=size, opening=opening, share=limit, headline=heads, later=later,
        )
        return Plan(excerpts, np.asarray(ids), rows, near, headlines)

    def _passage_tokens(self, near: Near, rows: np.ndarray) -> np.ndarray:
        """Tokens each passage adds to its excerpt: its flattened text and the gap mark before it."""
        out = np.zeros(len(rows), dtype=np.int64)
        missing: list[int] = []
        for j, r in enumerate(rows.tolist()):
            cached = self._tokens.get((int(near.owner[r]), int(near.spans[r, 0])))
            if cached is None:
                missing.append(j)
            else:
                out[j] = cached
        if missing:
            texts = []
            for j in missing:
                r = int(rows[j])
                a, b = near.spans[r].tolist()
                texts.append(_flat(near.full[int(near.owner[r])][a:b]) + " " + cutting.GAP)
            for j, n in zip(missing, self._counter().count_many(texts).tolist()):
                r = int(rows[j])
                out[j] = int(n)
                self._tokens[(int(near.owner[r]), int(near.spans[r, 0]))] = int(n)
        return out

    def unbudgeted(self, near: Near, memory_id: int, share: int, headline: str) -> tuple[str, list[tuple[int, int]]] | None:
        """A long memory's excerpt without a budget: headline, then its nearest passages within ``share`` characters."""
        own = near.of(memory_id)
        if not len(own):
            return None
        size = near.spans[own, 1] - near.spans[own, 0]
        chosen = passages.choose(size, near.similarity[own], share)
        return write(near, own[chosen], memory_id, headline)


__all__ = ["Excerpter", "Plan", "write"]
