"""Stage 5 of a search (and the tail of every mode): the result the agent receives, and its record.

From the scored candidates in relevance order: the budget fit (``fit``) or,
without a budget, every item at its tier; the other memory of an open
conflict or a supersession brought in as a headline where the caller may see
it; texts fetched; FULL and SUMMARY items counted as retrieved in the same
transaction that writes the audit line (``Store.touch``). Handed the store,
the fit, the token counter, the memory's lock and the default actor.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import numpy as np

from lodviz import budget as budgeting
from lodviz import scoring
from lodviz.errors import BudgetTooSmall, InvalidParameters
from lodviz.params import Params
from lodviz.records import AuditEvent, Columns
from lodviz.result import Hit, PendingHits, Result, render_items, returned_by_tier
from lodviz.scoring import Tier
from lodviz.search.fit import BudgetFit
from lodviz.search.hits import hit_of, hits, lengths
from lodviz.search.passages import Near
from lodviz.store.base import Store
from lodviz.times import RowDatetimes, iso
from lodviz.tokens import TokenCounter, count


class Delivery:
    """Turns scored candidates into a ``Result`` and puts it on record."""

    def __init__(
        self,
        store: Store,
        fit: BudgetFit,
        counter: Callable[[], TokenCounter],
        holding: Callable[[], AbstractContextManager[Any]],
        row_times: tuple[RowDatetimes, RowDatetimes],
        actor: Callable[[], str],
    ) -> None:
        self._store = store
        self._fit = fit
        self._counter = counter
        self._holding = holding
        self._row_times = row_times
        self._actor = actor

    def deliver(
        self,
        mode: str,
        sub: Columns,
        scored: scoring.Scored,
        params: Params,
        when: datetime,
        agent_id: str | None,
        *,
        order: np.ndarray,
        policy: str,
        query: str | None = None,
        exclude: Sequence[str] = (),
        budget_tokens: int | None = None,
        touch: bool = True,
        actor: str | None = None,
        extra: dict[str, Any] | None = None,
        record: bool = True,
        existed: set[int] | None = None,
        origin: np.ndarray | None = None,
        near: Near | None = None,
    ) -> Result:
        """Fit the budget, fetch texts, count retrievals and audit: the tail every mode shares.

        ``order`` lists the rows of ``sub`` most relevant first. ``record``
        False (``preview``) leaves no trace at all. ``existed``: in a replay,
        the memories that existed then (a conflict partner written later
        does not join). ``origin``: the rows of the store's state in ``sub``, if known.
        ``near``: the candidates' passages and their evidence (a search's): a long
        memory at SUMMARY comes back as an excerpt of its passages nearest the query.
        """
        if budget_tokens is not None and (isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 1):
            raise InvalidParameters(f"budget_tokens must be a whole number of at least 1, got {budget_tokens!r}.")
        if budget_tokens is not None and budget_tokens < budgeting.MIN_BUDGET:
            raise BudgetTooSmall(
                f"a budget of {budget_tokens} tokens cannot hold even one headline with the result's header "
                f"(at least {budgeting.MIN_BUDGET})."
            )
        keep = np.asarray(order)[scored.tier[order] > Tier.OUT]
        items: list[Hit] | PendingHits
        if budget_tokens is None:
            tiers = scored.tier[keep].astype(np.int64)
            # Sharpest first, by relevance within a tier: sorted here, as numbers, before the items exist
            # (a conflict's other memory joins as a headline, last: the order holds).
            sharpest = np.argsort(-tiers, kind="stable")
            rows, tiers = keep[sharpest], tiers[sharpest]
            ids = sub.ids[rows]
            id_list = ids.tolist()
            texts, sources = self._store.texts(ids, tiers)
            tokens = budgeting.tokens_for_length(lengths(sub, rows, tiers))
            quoted = self._excerpts(near, sub, rows, tiers, texts)
            excerpts = {int(ids[j]): spans for j, spans in quoted.items()}
            make = functools.partial(hits, sub, rows, tiers, texts, sources, scored, tokens, origin=origin, row_times=self._row_times)
            if quoted:
                make = functools.partial(_quoting, make, quoted)
            pending = PendingHits(ids, tiers, tokens, self._later(make))
            # An open conflict or a supersession among them (rare) marks items and may bring the other
            # memory in: the items are made now. Otherwise they are made when first read.
            items = pending
            if self._store.conflicts(id_list, status=["open", "superseded"]):
                items = self.mark_conflicts(pending.build(), agent_id, params, when, existed)
            counted = None
        else:
            fitted_items = self._fit.fit(mode, sub, scored, keep, budget_tokens, exclude, origin, policy, near)
            # The other memory of a conflict joins only where the budget still has room for it:
            # it never displaces what the query chose.
            fitted = len(fitted_items)
            fitted_items = self.mark_conflicts(fitted_items, agent_id, params, when, existed)
            while len(fitted_items) > fitted and count(self._counter(), render_items(mode, fitted_items, exclude, budget_tokens)) > budget_tokens:
                fitted_items.pop()
            counted = self._fit.trim(mode, fitted_items, exclude, budget_tokens)
            # Sharpest first, and by relevance within a tier (render() lists them by day).
            fitted_items.sort(key=lambda item: -int(item.tier))
            items = fitted_items
            excerpts = {item.id: list(item.excerpt) for item in fitted_items if item.excerpt}
        returned = items.by_tier() if isinstance(items, PendingHits) else returned_by_tier(items)
        touched = returned["FULL"] + returned["SUMMARY"]
        result = Result(
            mode=mode,
            items=items,
            params=params,
            now=when,
            agent_id=agent_id,
            query=query,
            exclude=list(exclude),
            budget_tokens=budget_tokens,
            candidates=len(sub),
            counted_tokens=counted,
            tokenizer=self._counter().name if counted is not None else None,
        )
        if not record:
            return result
        details = {
            "params": params.to_dict(),
            "counts": {name: len(members) for name, members in returned.items()},
            "tokens": result.tokens,
            "touched": touched if touch else [],
            # What the agent received, memory by memory: what a replay of this search is checked against.
            "returned": returned,
            "exclude": list(exclude),
            "budget_tokens": budget_tokens,
            "now": iso(when),
            **(extra or {}),
        }
        if excerpts:  # which passages of a long memory the agent read (offsets in its full text)
            details["excerpts"] = {str(m): [list(span) for span in spans] for m, spans in excerpts.items()}
        event = AuditEvent(
            action=mode, actor=actor or agent_id or self._actor(), agent_id=agent_id, query=query, details=details
        )
        if touch:
            self._store.touch(touched, when, event)
        else:  # a look that leaves no trace on the memories is still a search on record
            event.details["looked_only"] = True
            self._store.record(event)
        return result

    def _excerpts(
        self, near: Near | None, sub: Columns, rows: np.ndarray, tiers: np.ndarray, texts: list[str]
    ) -> dict[int, list[tuple[int, int]]]:
        """Without a budget: each long memory at SUMMARY as its headline and nearest passages (in ``texts``, in place),
        together within the summary's length.

        Returns the spans each excerpt quotes, by position in ``rows``.
        """
        if near is None or not len(near):
            return {}
        ids = sub.ids[rows]
        at = np.flatnonzero((tiers == Tier.SUMMARY) & np.isin(ids, near.owner))
        if not len(at):
            return {}
        heads = self._store.contents(ids[at].tolist(), [int(Tier.HEADLINE)] * len(at))
        quoted: dict[int, list[tuple[int, int]]] = {}
        for j in at.tolist():
            memory_id = int(ids[j])
            headline = heads[memory_id][0]
            # Headline and passages together about the summary's length: the estimate from the stored
            # lengths (``tokens``, the landscape's count) holds for the excerpt too.
            share = int(sub.len_summary[rows[j]]) - len(headline) - 3
            made = self._fit.excerpter.unbudgeted(near, memory_id, share, headline)
            if made is not None:
                texts[j], quoted[j] = made
        return quoted

    def _later(self, make: Callable[[], list[Hit]]) -> Callable[[], list[Hit]]:
        """``make`` to be called later under the memory's lock (the kept datetimes, ``RowDatetimes``, need it)."""

        def call() -> list[Hit]:
            with self._holding():
                return make()

        return call

    def mark_conflicts(
        self, items: list[Hit], agent_id: str | None, params: Params, when: datetime, existed: set[int] | None = None
    ) -> list[Hit]:
        """Mark items an open conflict or a supersession touches, and bring back the other memory too.

        The other memory joins the result as a headline (its id names it; the
        agent can expand it) unless it is there already, and only if the
        caller may see it. Items keep their order; the ones brought back come last.
        """
        if not items:
            return items
        by_id = {item.id: item for item in items}
        found = self._store.conflicts(list(by_id), status=["open", "superseded"])
        if not found:
            return items
        partners = {c.partner(i) for c in found for i in (c.memory_id, c.other_id) if i in by_id} - set(by_id)
        records = self._store.get(sorted(partners))
        visible = {
            rid: rec for rid, rec in records.items()
            if not rec.forgotten and rec.visible_to(agent_id) and (existed is None or rid in existed)
        }
        added: list[Hit] = []
        for rid, rec in sorted(visible.items(), key=lambda kv: kv[1].created_at, reverse=True):  # newest first
            hit = hit_of(rec, Tier.HEADLINE, params, when)
            added.append(hit)
            by_id[rid] = hit
        for c in found:
            if c.memory_id not in by_id or c.other_id not in by_id:
                continue
            if c.status == "open":
                by_id[c.memory_id].conflicts = [*by_id[c.memory_id].conflicts, c.other_id]
                by_id[c.other_id].conflicts = [*by_id[c.other_id].conflicts, c.memory_id]
            elif c.superseded_id in (c.memory_id, c.other_id):
                by_id[c.superseded_id].superseded_by = c.partner(c.superseded_id)
        return items + added


def _quoting(make: Callable[[], list[Hit]], quoted: dict[int, list[tuple[int, int]]]) -> list[Hit]:
    """The items ``make`` builds, the excerpts among them marked with the spans they quote."""
    items = make()
    for j, spans in quoted.items():
        items[j].excerpt = spans
    return items


__all__ = ["Delivery"]
