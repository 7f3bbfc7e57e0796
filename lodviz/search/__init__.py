"""A search, stage by stage: read this package top to bottom to follow a query.

``Memory.search`` checks the request and hands it to ``Pipeline.run``, which
passes it through the stages in order and returns the ``Result``:

1. ``candidates``: the query's vector and its k nearest memories the agent
   may see (less the exclusion penalty);
2. ``evidence``: cosine and lexical evidence fused into S (for a long
   memory, of its passages too: ``passages``), the candidates ranked by it;
3. ``lodviz.scoring``: decay, the score L and the tier of each candidate
   (pure math);
4. ``fit``: the budget fit, in real tokens of the rendered text (long
   memories passage by passage: ``excerpts``);
5. ``delivery``: texts, conflicts, the ``Result``, and the audit line with
   promotion by use.

``hits`` builds result items for stages 4 and 5. Nothing here imports
``lodviz.memory``: each stage is handed the store and what else it needs.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import numpy as np

from lodviz import scoring
from lodviz.params import AnswerSettings, Params
from lodviz.records import Columns
from lodviz.result import Result
from lodviz.search.candidates import CandidateFinder
from lodviz.search.delivery import Delivery
from lodviz.search.evidence import Candidates
from lodviz.search.fit import BudgetFit
from lodviz.store.base import Store
from lodviz.times import RowDatetimes
from lodviz.tokens import TokenCounter


class Pipeline:
    """The stages of a search, wired over one store; ``run`` is a search from its vector to its record."""

    def __init__(
        self,
        store: Store,
        embed_query: Callable[[str], np.ndarray],
        counter: Callable[[], TokenCounter],
        holding: Callable[[], AbstractContextManager[Any]],
        row_times: tuple[RowDatetimes, RowDatetimes],
        actor: Callable[[], str],
    ) -> None:
        self.store = store
        self.embed_query = embed_query
        self.candidates = CandidateFinder(store, embed_query)
        self.fit = BudgetFit(store, counter, row_times)
        self.delivery = Delivery(store, self.fit, counter, holding, row_times, actor)

    def forget(self, memory_id: int) -> None:
        """Drop what the stages kept that a forgotten memory's texts or vector went into."""
        self.candidates.forget()
        self.fit.forget(memory_id)

    def run(
        self,
        snapshot: tuple[Columns, np.ndarray],
        query: str,
        params: Params,
        when: datetime,
        agent_id: str | None,
        exclude: list[str],
        exclude_weight: float,
        *,
        budget_tokens: int | None,
        touch: bool,
        actor: str | None,
        record: bool,
        settings: AnswerSettings,
        past: bool = False,
    ) -> Result:
        """A search over ``snapshot`` (the store now, or as it was: ``past``), answered with ``settings``."""
        state, vectors = snapshot
        visible = state.visible_to(agent_id)
        # 1-2. the query's vector, its candidates, and S from their evidence
        qvec = self.embed_query(query)
        found = self.candidates.find(query, qvec, state, vectors, visible, params.k, exclude, exclude_weight,
                                     lexical_weight=settings.lexical_weight)
        # 3. decay, score and tier
        sub = state.take(found.rows)
        t = scoring.age_days(when.timestamp(), sub.created_at, sub.last_retrieved_at)
        scored = scoring.score_all(found.similarity, t, sub.retrieval_count, sub.floor, params, found.penalty)
        # 4-5. the budget fit and the delivery, on record
        return self.delivery.deliver(
            "search",
            sub,
            scored,
            params,
            when,
            agent_id,
            query=query,
            exclude=exclude,
            budget_tokens=budget_tokens,
            touch=touch,
            actor=actor,
            order=np.arange(len(sub)),  # most relevant first
            record=record,
            policy=settings.budget_policy,
            # Which way the k nearest were found ("scan" or an index), and the store's own settings
            # that shape an answer, so that a replay asks exactly the same question.
            extra={"nearest": self.store.last_nearest, "exclude_weight": exclude_weight,
                   "lexical_weight": settings.lexical_weight, "budget_policy": settings.budget_policy},
            existed=set(state.ids[visible].tolist()) if past else None,
            origin=None if past else found.rows,  # a past state's rows are its own
            near=found.near,
        )


__all__ = ["Candidates", "Pipeline"]
