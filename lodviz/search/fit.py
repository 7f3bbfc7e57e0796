"""Stage 4 of a search: the budget fit, in real tokens of the text the agent receives.

Prices each candidate's rendered line at each tier it may take, and each day
heading, with the token counter, and lets ``budget.fit`` choose the tiers
(detail is given up before coverage: docs/contract.md); ``trim`` then counts
the rendered result itself. A line's cost is kept by memory and tier, since
texts never change once written.

A long memory among the candidates may come back at SUMMARY as an excerpt of
its passages nearest the query (``excerpts``): its passages are priced one by
one and chosen by ``budget.fit_excerpts`` in order of relevance.

Handed the store and the token counter; builds items with ``hits``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime

import numpy as np

from lodviz import budget as budgeting
from lodviz import scoring
from lodviz.errors import BudgetTooSmall
from lodviz.records import Columns
from lodviz.result import Hit, date_line, header, line, render_items, year_line
from lodviz.scoring import Tier
from lodviz.search.excerpts import Excerpter
from lodviz.search.hits import hits
from lodviz.search.passages import Near
from lodviz.store.base import Store
from lodviz.times import RowDatetimes
from lodviz.tokens import TokenCounter, count


class BudgetFit:
    """Fits a result into a token budget; remembers what each line costs."""

    def __init__(self, store: Store, counter: Callable[[], TokenCounter], row_times: tuple[RowDatetimes, RowDatetimes]) -> None:
        self._store = store
        self._counter = counter
        self._row_times = row_times
        # Per memory id and tier: the tokens of its rendered line, filled as budgeted searches need them.
        self._line_tokens: dict[tuple[int, int], int] = {}
        self.excerpter = Excerpter(store, counter)

    def forget(self, memory_id: int) -> None:
        """Drop what a forgotten memory's lines cost."""
        for tier in (1, 2, 3):
            self._line_tokens.pop((memory_id, tier), None)
        self.excerpter.forget(memory_id)

    def fit(
        self,
        mode: str,
        sub: Columns,
        scored: scoring.Scored,
        keep: np.ndarray,
        budget: int,
        exclude: Sequence[str],
        origin: np.ndarray | None,
        policy: str,
        near: Near | None = None,
    ) -> list[Hit]:
        """The items of a result within ``budget`` real tokens of ``render()``, most relevant first.

        ``near``: the candidates' passages with their evidence; long memories among them may come back as excerpts.
        """
        counter = self._counter()
        newline = max(count(counter, "a\nb") - count(counter, "a") - count(counter, "b"), 0)
        # Only as many candidates as could possibly fit: the cheapest line is a few tokens.
        estimate = np.cumsum(budgeting.tokens_for_length(sub.len_headline[keep]) // 2)
        keep = keep[: int(np.searchsorted(estimate, budget)) + 1]
        natural = scored.tier[keep].astype(np.int64)
        ids = sub.ids[keep]
        texts: dict[int, dict[int, tuple[str, str | None]]] = {}
        for tier in (Tier.HEADLINE, Tier.SUMMARY, Tier.FULL):
            wanted = np.flatnonzero(natural >= tier)
            texts[tier] = self._store.contents(ids[wanted].tolist(), [int(tier)] * len(wanted)) if len(wanted) else {}
        lengths = {Tier.HEADLINE: sub.len_headline, Tier.SUMMARY: sub.len_summary, Tier.FULL: sub.len_text}
        costs = np.zeros((len(keep), 4), dtype=np.int64)
        lines: list[str] = []
        slots: list[tuple[int, int]] = []
        for level in (Tier.HEADLINE, Tier.SUMMARY, Tier.FULL):
            t = int(level)
            for i in np.flatnonzero(natural >= t).tolist():
                row = int(keep[i])
                cached = self._line_tokens.get((int(ids[i]), t))
                if cached is not None:
                    costs[i, t] = cached
                    continue
                whole = bool(lengths[level][row] == sub.len_text[row])
                lines.append(line(int(ids[i]), texts[level][int(ids[i])][0], whole))
                slots.append((i, t))
        if lines:
            for (i, t), n in zip(slots, counter.count_many(lines).tolist()):
                costs[i, t] = n
                self._line_tokens[(int(ids[i]), t)] = n
        costs[:, 1:] += newline
        # Groups: the days, each under its year's heading, then the years.
        day_of = [datetime.fromtimestamp(x, tz=UTC).date() for x in sub.created_at[keep].tolist()]
        days = sorted(set(day_of))
        years = sorted({d.year for d in days})
        day_index = {d: g for g, d in enumerate(days)}
        year_index = {y: len(days) + g for g, y in enumerate(years)}
        groups = np.array([day_index[d] for d in day_of], dtype=np.int64)
        parents = np.array([year_index[d.year] for d in days] + [-1] * len(years), dtype=np.int64)
        headings = [date_line(d) for d in days] + [year_line(date(y, 1, 1)) for y in years]
        group_costs = counter.count_many(headings) + newline
        keys = scored.similarity[keep] - scored.penalty[keep]
        plan = None if near is None else self.excerpter.plan(
            ids, natural, keys, scored.penalty[keep], near, sub.len_summary[keep], sub.len_text[keep],
            {int(m): text for m, (text, _) in texts[Tier.HEADLINE].items()}, budget,
        )
        long = np.zeros(len(keep), dtype=bool)
        if plan is not None:
            long[plan.excerpts.item] = True
        # An upper bound on the counts' digits (with excerpts: as many again, counted apart).
        most = {"FULL": len(keep), "SUMMARY": len(keep) * (2 if plan else 1), "HEADLINE": len(keep)}
        fixed = count(counter, header(mode, most, exclude, len(keep) if plan else 0, budget)) + newline
        # The least a result costs: one headline's header, and the smallest headline with its date headings.
        least = count(counter, header(mode, {"FULL": 0, "SUMMARY": 0, "HEADLINE": 1}, exclude, 0, budget)) + newline
        shown = natural > Tier.OUT
        dated = budgeting.headings(group_costs, parents)[groups]
        cheapest = int((costs[shown, Tier.HEADLINE] + dated[shown]).min()) if shown.any() else 0
        if least + cheapest > budget:
            # Said in the caller's terms: the budget it gave, not what a header leaves of it.
            raise BudgetTooSmall(
                f"a budget of {budget} tokens cannot hold even one headline with the result's header: the header "
                f"takes {least} and the smallest headline with its date {cheapest}; give at least {least + cheapest}."
            )
        detail_order = np.argsort(-scored.score[keep], kind="stable")

        def choose(room: int) -> budgeting.Fitted:
            return budgeting.fit_excerpts(
                natural, costs, room, groups=groups, group_costs=group_costs, parents=parents, detail_order=detail_order, policy=policy,
                excerpts=plan.excerpts if plan else None, keys=keys,
            )

        try:
            fitted = choose(budget - fixed)
        except BudgetTooSmall:
            # The header was priced for the largest counts; one headline's is shorter and leaves room
            # (``trim`` keeps the rendered whole within the budget).
            fitted = choose(budget - least)
        # The header was priced for the largest counts; the real one is often shorter, and what it frees may hold more.
        def header_cost(tiers: np.ndarray) -> int:
            shown = {t.name: int((tiers == t).sum()) for t in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE)}
            return count(counter, header(mode, shown, exclude, int((long & (tiers == Tier.SUMMARY)).sum()), budget)) + newline

        actual = header_cost(fitted.tiers)
        if actual < fixed:
            roomier = choose(budget - actual)
            if header_cost(roomier.tiers) <= actual:
                fitted = roomier
        tiers = fitted.tiers
        chosen = np.flatnonzero(tiers > Tier.OUT)
        found = [texts[int(tiers[i])][int(ids[i])] for i in chosen.tolist()]
        contents = [text for text, _ in found]
        tokens = costs[chosen, tiers[chosen]].copy()
        quoted: dict[int, list[tuple[int, int]]] = {}
        if plan is not None:
            for j, i in enumerate(chosen.tolist()):
                if long[i] and tiers[i] == Tier.SUMMARY:
                    contents[j], quoted[j] = plan.content(i, fitted.passages, bool(fitted.headed[i]))
                    mine = (plan.excerpts.item == i) & fitted.passages
                    tokens[j] = int(plan.excerpts.opening[i]) + int(plan.excerpts.cost[mine].sum()) + (
                        int(plan.excerpts.headline[i]) if fitted.headed[i] else 0)
        items = hits(
            sub, keep[chosen], tiers[chosen].astype(np.int64), contents, [source for _, source in found],
            scored, tokens, origin=origin, row_times=self._row_times,
        )
        for j, spans in quoted.items():
            items[j].excerpt = spans
        return items

    def trim(self, mode: str, items: list[Hit], exclude: Sequence[str], budget: int) -> int:
        """Count the rendered result; while it is over ``budget`` (a BPE tokenizer merging across
        lines, conflict markers), leave out the least relevant item. Returns the count."""
        while True:
            used = count(self._counter(), render_items(mode, items, exclude, budget))
            if used <= budget or not items:
                return used
            items.pop()  # relevance order: the least relevant goes first


__all__ = ["BudgetFit"]
