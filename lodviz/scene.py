"""The whole store scored at once, and one memory's place in it: what the landscape draws and explains.

``Scene.landscape`` gives every memory the agent may see the tier a search
with these settings would give it, without touching any (with no query S is
0 and the tiers follow recency alone; S of a query's k candidates carries
their lexical evidence, as in a search). ``Scene.explain`` says why one
memory sits where it sits. Both read the store now or as it was
(``timeline``), and use a search's own candidate stage (``search.candidates``),
so the landscape, the panel and a search cannot disagree about a tier.

Handed the store, the timeline, the candidate stage and the query embedder;
callers resolve the agent's profile and "now".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

import numpy as np

from lodviz import history, scoring
from lodviz.cache import LRU
from lodviz.params import AnswerSettings, Params
from lodviz.records import AuditEvent, Columns, MemoryRecord
from lodviz.result import Landscape
from lodviz.scoring import Tier
from lodviz.search.candidates import CandidateFinder
from lodviz.store.base import Store
from lodviz.timeline import Timeline
from lodviz.times import iso


class Scene:
    """The landscape of one store under any settings, and why a memory sits where it sits."""

    def __init__(self, store: Store, timeline: Timeline, candidates: CandidateFinder, embed_query: Callable[[str], np.ndarray]) -> None:
        self._store = store
        self._timeline = timeline
        self._candidates = candidates
        self._embed_query = embed_query
        self._ages_cache: LRU[scoring.Compact] = LRU(2)

    def landscape(
        self,
        query: str | None,
        agent_id: str | None,
        params: Params,
        when: datetime,
        moment: history.Moment | None,
        exclude: Sequence[str],
        exclude_weight: float,
        settings: AnswerSettings,
    ) -> Landscape:
        """Every memory ``agent_id`` may see, scored and tiered for ``query`` at ``when`` (as of ``moment``)."""
        state, vectors = self._timeline.snapshot(moment)
        visible = state.visible_to(agent_id)
        everything = bool(visible.all())
        rows = slice(None) if everything else np.flatnonzero(visible)
        n_all = len(state)
        qvec = None
        penalty_all = self._candidates.penalty(exclude, vectors, exclude_weight) if n_all else None
        if query and query.strip() and n_all and visible.any():
            qvec = self._embed_query(query)
            cosine = self._candidates.similarity_all(query, qvec, vectors)
            # A compact matrix's S of everything is approximate: the candidates are found exactly, as a search finds them.
            found = self._candidates.find(
                query, qvec, state, vectors, visible, params.k, exclude, exclude_weight,
                cosine=None if self._store.approximate else cosine, lexical_weight=settings.lexical_weight,
            )
            s_all, candidate_all = self._candidates.fused(found, cosine)
            # The memories a search could return: their tiers must be a search's to the last bit.
            returnable: np.ndarray | None = found.rows
        else:
            candidate_all = np.ones(n_all, dtype=bool)
            s_all = scoring.Compact.zeros(n_all)
            returnable = None  # every memory
        ages = self.ages(when.timestamp(), state, moment)
        candidate = candidate_all[rows]
        if not everything:
            state = state.take(rows)
            ages = ages.take(rows)
            s_all = s_all.take(rows)
            if returnable is not None:
                returnable = np.flatnonzero(candidate)
        if penalty_all is not None:
            scored = scoring.score_aged(s_all.exact, ages.exact, state.floor, params, penalty_all[rows])
        else:  # a slider move: float32, with a search's tiers for what a search could return
            scored = scoring.score_compact(s_all, ages, state.floor, params, returnable)
        terms = tuple(t.strip() for t in exclude if t and t.strip())
        return Landscape(state, scored, params, when, query, qvec, candidate, vectors, rows, terms)

    def ages(self, now: float, state: Columns, moment: history.Moment | None = None) -> scoring.Compact:
        """``scoring.effective_age`` of every memory at ``now``, kept while the store's ages and counts stand.

        A slider move rescores the whole store with new parameters at the same
        "now": the ages are the part of the work that does not change.
        """
        def make() -> scoring.Compact:
            return scoring.Compact.of(
                scoring.effective_age(scoring.age_days(now, state.created_at, state.last_retrieved_at), state.retrieval_count)
            )

        version = self._store.version()
        if version is None:
            return make()
        # A past moment's usage is rebuilt, not the store's: it is its own key.
        return self._ages_cache.get((now, version, len(state), moment, self._timeline.seen if moment else None), make)

    def explain(
        self,
        record: MemoryRecord,
        query: str | None,
        agent_id: str | None,
        params: Params,
        when: datetime,
        moment: history.Moment | None,
        exclude: Sequence[str],
        exclude_weight: float,
        settings: AnswerSettings,
    ) -> scoring.Placement:
        """Why ``record`` sits at its tier for this query and these settings (at ``moment``)."""
        state, vectors = self._timeline.snapshot(moment)
        row = int(state.rows_of([record.id])[0])
        vector = vectors[row : row + 1]
        s = 0.0
        if query and query.strip():
            # As in a search: S carries lexical evidence if the memory is among the query's candidates.
            qvec = self._embed_query(query)
            cosine = None if self._store.approximate else self._candidates.similarity_all(query, qvec, vectors)
            found = self._candidates.find(
                query, qvec, state, vectors, state.visible_to(agent_id), params.k, exclude, exclude_weight, cosine=cosine,
                lexical_weight=settings.lexical_weight,
            )
            at = np.flatnonzero(found.rows == row)
            if len(at):
                s = float(found.similarity[at[0]])
            else:
                s = max(float(cosine[row] if cosine is not None else scoring.similarity(qvec, vector)[0]), 0.0)
        penalty = self._candidates.penalty(exclude, vector, exclude_weight)
        t = float(scoring.age_days(when.timestamp(), state.created_at[row : row + 1], state.last_retrieved_at[row : row + 1])[0])
        return scoring.explain(
            s, t, int(state.retrieval_count[row]), int(state.floor[row]), params,
            penalty=float(penalty[0]) if penalty is not None else 0.0,
        )

    def record_view(self, land: Landscape, agent_id: str | None, actor: str) -> None:
        """Audit a landscape looked at with a query (the app's searches) as a search that touched nothing.

        The counts are those of the query's k candidates, as a search with the
        same settings would return them.
        """
        if not land.query:
            return
        tiers = land.scored.tier[land.candidate]
        counts = {t.name: int((tiers == t).sum()) for t in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE)}
        ids = land.state.ids[land.candidate]
        returned = {t.name: ids[tiers == t].tolist() for t in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE)}
        self._store.record(
            AuditEvent(
                action="search",
                actor=actor,
                agent_id=agent_id,
                query=land.query,
                details={
                    "params": land.params.to_dict(),
                    "counts": counts,
                    "touched": [],
                    "returned": returned,
                    "looked_only": True,
                    "view": True,  # the landscape's tiers of the k candidates: a replay compares those, not a search's answer
                    "now": iso(land.now),
                    "exclude": list(land.exclude),
                },
            )
        )


__all__ = ["Scene"]
