"""The LOD scoring math of the contract (docs/contract.md), vectorised: numpy in, numpy out, no I/O.

For one query against N memories:

    S = 1 - (1 - max(0, cos(e_q, e_m))) * (1 - w*lex)  similarity: cosine OR lexical evidence
    D = exp(-lambda * t / (1 + ln(1 + r)))           temporal decay
    L = alpha * S + (1 - alpha) * D                  LOD score
    tier = FULL | SUMMARY | HEADLINE | OUT by L against theta1 > theta2 > theta3,
           then lifted to at least the memory's tier floor.

Every face (browser, CLI, MCP server) gets its numbers from here, so they can
never disagree about a tier.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from lodviz.params import Params

SECONDS_PER_DAY = 86_400.0


class Tier(IntEnum):
    """Resolution levels; a larger value is a sharper resolution."""

    OUT = 0
    HEADLINE = 1
    SUMMARY = 2
    FULL = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: str | int | Tier) -> Tier:
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                raise ValueError(f"unknown tier {value!r}") from None
        return cls(int(value))


def normalize_rows(matrix: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32, into ``out`` if given.

    ``einsum`` for the squared norms and one division: a store's first load
    normalises a million rows, where ``linalg.norm`` and a masked division into
    fresh zeros cost several times as much.
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.sqrt(np.einsum("...i,...i->...", matrix, matrix))[..., None]
    bad = ~(norms > 0)  # zero, NaN: such a row becomes zero, never NaN in a dot product
    norms[bad] = 1.0
    if out is None:
        out = np.empty_like(matrix)
    np.divide(matrix, norms, out=out)
    if bad.any():
        out[np.broadcast_to(bad, out.shape)] = 0.0
    return out


def similarity(query: np.ndarray, unit_matrix: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """S for one query against every row of an already unit-normalised matrix (into ``out``, float32, if given)."""
    q = normalize_rows(np.asarray(query, dtype=np.float32).reshape(1, -1))[0]
    if unit_matrix.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    s = np.asarray(unit_matrix @ q, dtype=np.float32) if out is None else np.matmul(unit_matrix, q, out=out)
    return np.maximum(s, 0.0, out=s)  # in place: at 1M memories a second array costs a pass of its own


def fuse(cosine: np.ndarray, lexical: np.ndarray, weight: float = 1.0) -> np.ndarray:
    """S from the cosine and lexical evidence: ``1 - (1 - max(0, cos)) * (1 - weight * lex)``.

    A probabilistic OR: either signal alone can make a memory relevant,
    lexical evidence only ever raises S, and S stays in [0, 1] when lex is.
    ``weight`` 0 leaves S the cosine.
    """
    cos = np.clip(np.asarray(cosine, dtype=np.float64), 0.0, 1.0)
    lex = np.clip(np.asarray(lexical, dtype=np.float64), 0.0, 1.0)
    return 1.0 - (1.0 - cos) * (1.0 - weight * lex)


def age_days(
    now: float, created_at: np.ndarray, last_retrieved_at: np.ndarray
) -> np.ndarray:
    """t: fractional days since last retrieval (or creation if never), clamped at 0.

    Times are POSIX seconds; a missing last retrieval is NaN.
    """
    created_at = np.asarray(created_at, dtype=np.float64)
    last = np.asarray(last_retrieved_at, dtype=np.float64)
    # In place on one fresh array: a slider move rescores every memory.
    age = np.where(np.isnan(last), created_at, last)
    np.subtract(now, age, out=age)
    age /= SECONDS_PER_DAY
    return np.maximum(age, 0.0, out=age)


def decay(t_days: np.ndarray, retrieval_count: np.ndarray, lam: float) -> np.ndarray:
    """D = exp(-lambda * t / (1 + ln(1 + r))), in (0, 1]."""
    return decay_of(effective_age(t_days, retrieval_count), lam)


def effective_age(t_days: np.ndarray, retrieval_count: np.ndarray) -> np.ndarray:
    """``t / (1 + ln(1 + r))``: the part of D that does not depend on lambda.

    A slider move changes lambda, never the ages or the counts, so the
    landscape keeps this per "now" and a rescoring starts from it.
    """
    # In place on two fresh arrays instead of six temporaries.
    t = np.array(t_days, dtype=np.float64)
    np.maximum(t, 0.0, out=t)
    r = np.array(retrieval_count, dtype=np.float64)
    np.maximum(r, 0.0, out=r)
    np.log1p(r, out=r)
    r += 1.0
    t /= r
    return t


def decay_of(age: np.ndarray, lam: float) -> np.ndarray:
    """D from ``effective_age``: ``exp(-lambda * age)`` (the same operations as ``decay``, so the same bits)."""
    d = np.multiply(age, -lam, dtype=np.float64)
    return np.exp(d, out=d)


def lod_score(s: np.ndarray, d: np.ndarray, alpha: float) -> np.ndarray:
    """L = alpha * S + (1 - alpha) * D."""
    return alpha * np.asarray(s, dtype=np.float64) + (1.0 - alpha) * np.asarray(
        d, dtype=np.float64
    )


def exclusion_penalty(exclude_sims: np.ndarray, weight: float = 1.0) -> np.ndarray:
    """Penalty for memories close to excluded topics (negative retrieval).

    ``exclude_sims`` is (terms, N) cosine similarities; the penalty is
    ``weight * max(0, max over terms)``: a memory pays for its closest excluded
    topic, once. It is subtracted from L (see ``penalised``).
    """
    sims = np.asarray(exclude_sims, dtype=np.float64)
    if sims.ndim == 1:
        sims = sims[None, :]
    if sims.shape[0] == 0:
        return np.zeros(sims.shape[1] if sims.ndim == 2 else 0)
    return weight * np.maximum(sims.max(axis=0), 0.0)


def penalised(score: np.ndarray, penalty: np.ndarray) -> np.ndarray:
    """L after the exclusion penalty, kept in [0, 1]."""
    return np.maximum(np.asarray(score, dtype=np.float64) - penalty, 0.0)


def tiers(
    score: np.ndarray,
    params: Params,
    floor: np.ndarray | None = None,
) -> np.ndarray:
    """Tier per memory (``Tier`` values as int8), lifted to the floor where given."""
    score = np.asarray(score, dtype=np.float64)
    # theta1 > theta2 > theta3 (Params guarantees it), so a memory's tier is the
    # number of thresholds its score reaches: OUT 0, HEADLINE 1, SUMMARY 2, FULL 3.
    out = np.greater_equal(score, params.theta3).view(np.int8)
    out += np.greater_equal(score, params.theta2).view(np.int8)
    out += np.greater_equal(score, params.theta1).view(np.int8)
    if floor is not None:
        out = np.maximum(out, np.asarray(floor, dtype=np.int8))
    return out


def frequency_score(retrieval_count: np.ndarray) -> np.ndarray:
    """The time-window mode's score, from retrieval frequency alone.

    F = 1 - 1 / (1 + ln(1 + r)): 0 for a memory never retrieved, about 0.41
    after one retrieval, 0.64 after five, approaching 1 with diminishing returns
    (the same log as in D, so "used often" means the same thing in both).
    """
    r = np.maximum(np.asarray(retrieval_count, dtype=np.float64), 0.0)
    return 1.0 - 1.0 / (1.0 + np.log1p(r))


@dataclass(frozen=True)
class Scored:
    """S, D, penalty, L and tier for N memories under one set of parameters."""

    similarity: np.ndarray
    decay: np.ndarray
    penalty: np.ndarray
    score: np.ndarray
    tier: np.ndarray

    def counts(self) -> dict[Tier, int]:
        found = np.bincount(self.tier.astype(np.int64), minlength=4)
        return {tier: int(found[tier]) for tier in Tier}


def score_all(
    s: np.ndarray,
    t_days: np.ndarray,
    retrieval_count: np.ndarray,
    floor: np.ndarray,
    params: Params,
    penalty: np.ndarray | None = None,
) -> Scored:
    """Score and tier N memories whose S and ages are already known.

    This is the whole rescoring a slider move needs: no embedding, no query.
    """
    return score_aged(s, effective_age(t_days, retrieval_count), floor, params, penalty)


def score_aged(
    s: np.ndarray,
    age: np.ndarray,
    floor: np.ndarray,
    params: Params,
    penalty: np.ndarray | None = None,
) -> Scored:
    """``score_all`` from ``effective_age`` (kept per "now"): D, L and tiers in a few passes.

    The same operations in the same order as ``decay``, ``lod_score`` and
    ``tiers``, so the same float64 bits and the same tiers as a search; only
    written into arrays made once, where numpy would make a temporary per
    operation. float32 would halve the memory traffic, but a score within its
    rounding of a threshold could then take another tier than in a search.
    """
    d = decay_of(age, params.lam)
    if penalty is not None:
        score = penalised(lod_score(s, d, params.alpha), penalty)
        return Scored(np.asarray(s), d, penalty, score, tiers(score, params, floor))
    score = np.multiply(s, params.alpha, dtype=np.float64)
    rest = np.multiply(d, 1.0 - params.alpha)
    np.add(score, rest, out=score)
    # L >= theta3, theta2, theta1 counted into one int8 array (see ``tiers``).
    reached = np.empty(len(score), dtype=bool)
    tier = np.greater_equal(score, params.theta3, out=np.empty(len(score), dtype=bool)).view(np.int8)
    for theta in (params.theta2, params.theta1):
        np.greater_equal(score, theta, out=reached)
        np.add(tier, reached.view(np.int8), out=tier)
    np.maximum(tier, np.asarray(floor, dtype=np.int8), out=tier)
    # No penalty: zeros that take no memory (a read-only view of one zero).
    return Scored(np.asarray(s), d, no_penalty(len(score)), score, tier)



#: Past this lambda a float32 ``-lambda * age`` could overflow where float64 does not: such a
#: rescoring takes the float64 path.
COMPACT_MAX_LAMBDA = 1e6
_LOG2_E = float(np.log2(np.e))


@dataclass(frozen=True)
class Compact:
    """A float64 array beside its float32 copy: S or the effective ages of every memory, as the
    landscape keeps them between slider moves (the copy is read on every move, the float64
    array only where a tier needs it)."""

    exact: np.ndarray
    f32: np.ndarray
    magnitude: float  # the largest |value|, inf if any is not finite

    @classmethod
    def of(cls, values: np.ndarray) -> Compact:
        exact = np.asarray(values, dtype=np.float64)
        f32 = exact.astype(np.float32)
        magnitude = float(np.abs(exact).max()) if len(exact) else 0.0
        for a in (exact, f32):
            a.setflags(write=False)  # shared between calls
        return cls(exact, f32, magnitude if np.isfinite(magnitude) else float("inf"))

    @classmethod
    def zeros(cls, n: int) -> Compact:
        """S of a landscape without a query: no pass to find the magnitude of zeros."""
        exact, f32 = np.zeros(n, dtype=np.float64), np.zeros(n, dtype=np.float32)
        for a in (exact, f32):
            a.setflags(write=False)
        return cls(exact, f32, 0.0)

    def take(self, rows: np.ndarray | slice) -> Compact:
        return Compact(self.exact[rows], self.f32[rows], self.magnitude)

    def __len__(self) -> int:
        return len(self.exact)


def score_compact(
    s: Compact, age: Compact, floor: np.ndarray, params: Params, exact_rows: np.ndarray | None = None
) -> Scored:
    """``score_aged`` in float32, for a slider move, with ``score_aged``'s own tiers wherever a search could return them.

    Half the memory traffic of float64, and D as ``exp2`` of float32, which
    numpy computes four times as fast as float64's ``exp`` (``exp`` of float32,
    twice as fast, where ``exp2`` would fall below 2**-126). L in float32 is
    within about 1e-6 of float64's: each input and each of the five
    operations rounds at 2**-24 relative, ``exp2`` is within a few ulps, and
    |S| and D <= 1 bound the rest. A memory whose float32 L lies within a
    margin of a threshold, set over ten times wider than that bound, is
    scored again in float64 with ``score_aged``'s very operations and takes
    its tier, D and L; any other memory's tier is already ``score_aged``'s.

    With ``exact_rows`` (a query's k candidates, the only memories a search
    can return) only those rows are held to that: elsewhere a memory within
    1e-6 of a threshold may show the tier on the other side of it, and the
    check costs nothing over the whole store.
    """
    if (
        not len(s)
        or params.lam > COMPACT_MAX_LAMBDA
        or not np.isfinite(s.magnitude)
        or not np.isfinite(age.magnitude)
    ):
        return score_aged(s.exact, age.exact, floor, params)
    if age.magnitude * params.lam * _LOG2_E <= 126.0:
        d = np.multiply(age.f32, np.float32(-params.lam * _LOG2_E))
        np.exp2(d, out=d)  # exp(-lambda * age)
    else:  # numpy's float32 exp2 below 2**-126 takes a path twenty times slower; exp has none
        d = np.multiply(age.f32, np.float32(-params.lam))
        np.exp(d, out=d)
    score = np.multiply(s.f32, np.float32(params.alpha))
    scratch = np.multiply(d, np.float32(1.0 - params.alpha))
    np.add(score, scratch, out=score)
    reached = scratch.view(np.bool_)[: len(score)]  # the scratch's bytes, free again
    margin = 2.0**-16 * (1.0 + s.magnitude)
    if exact_rows is None:
        # The tier each L surely reaches (L >= theta + margin), and the tier it may reach (L >= theta - margin).
        tier = _reached(score, params, margin, reached)
        maybe = _reached(score, params, -margin, reached)
        np.subtract(maybe, tier, out=maybe)
        near = np.flatnonzero(maybe != 0) if _any_byte(maybe) else None  # nonzero of bools: ten times faster than of int8
    else:
        tier = _reached(score, params, 0.0, reached)
        rows = np.asarray(exact_rows, dtype=np.intp)
        scores = score[rows]
        close = np.zeros(len(rows), dtype=bool)
        for theta in params.thresholds:
            close |= np.abs(scores - np.float32(theta)) < margin
        near = rows[close]
    if near is not None and len(near):
        exact = score_aged(s.exact[near], age.exact[near], np.zeros(len(near), dtype=np.int8), params)
        tier[near] = exact.tier
        score[near] = exact.score
        d[near] = exact.decay
    np.maximum(tier, np.asarray(floor, dtype=np.int8), out=tier)
    return Scored(s.exact, d, no_penalty(len(score)), score, tier)


#: The one float64 zero every row of ``no_penalty`` reads (immutable bytes: the arrays are read-only).
_ZERO = bytes(8)


def no_penalty(n: int) -> np.ndarray:
    """A read-only float64 zero for each of ``n`` rows, held in one element (stride 0).

    ``np.broadcast_to`` makes the same array through ~5 µs of Python, this
    in ~1 µs: a slider move at 100k memories costs ~200 µs in all.
    """
    return np.ndarray((n,), dtype=np.float64, buffer=_ZERO, strides=(0,))


def _reached(score: np.ndarray, params: Params, shift: float, reached: np.ndarray) -> np.ndarray:
    """How many thresholds each float32 L reaches, each threshold raised by ``shift``, as int8."""
    tier = np.greater_equal(score, np.float32(params.theta3 + shift)).view(np.int8)
    for theta in (params.theta2, params.theta1):
        np.greater_equal(score, np.float32(theta + shift), out=reached)
        np.add(tier, reached.view(np.int8), out=tier)
    return tier


def _any_byte(a: np.ndarray) -> bool:
    """Whether an int8 array holds any non-zero byte, eight bytes at a time."""
    whole = len(a) // 8 * 8
    return bool(a[:whole].view(np.uint64).any() or a[whole:].any())



# -- the non-semantic modes: no query, so no S; L is what each mode ranks by ---------


def score_by_frequency(t_days: np.ndarray, retrieval_count: np.ndarray, floor: np.ndarray, params: Params) -> Scored:
    """``recent``: L is how often each memory was retrieved; HEADLINE at the least."""
    freq = frequency_score(retrieval_count)
    d = decay(t_days, retrieval_count, params.lam)
    tier = np.maximum(tiers(freq, params, floor), Tier.HEADLINE).astype(np.int8)
    return Scored(np.zeros(len(d)), d, np.zeros(len(d)), freq, tier)


def score_by_recency(t_days: np.ndarray, retrieval_count: np.ndarray, floor: np.ndarray, params: Params) -> Scored:
    """``unseen``: L = D; HEADLINE at the least."""
    d = decay(t_days, retrieval_count, params.lam)
    tier = np.maximum(tiers(d, params, floor), Tier.HEADLINE).astype(np.int8)
    return Scored(np.zeros(len(d)), d, np.zeros(len(d)), d, tier)


def resurface_weights(d: np.ndarray) -> np.ndarray:
    """``sample``: the chance of each memory, proportional to 1 - D plus a small floor
    so that nothing is impossible; sums to 1."""
    weights = (1.0 - np.asarray(d, dtype=np.float64)) + 1e-3
    return weights / weights.sum() if len(weights) else weights


def score_resurfaced(d: np.ndarray, floor: np.ndarray) -> Scored:
    """``sample``: drawn memories come back as summaries (so they count as used), or their floor."""
    tier = np.maximum(np.full(len(d), Tier.SUMMARY, dtype=np.int8), floor)
    return Scored(np.zeros(len(d)), d, np.zeros(len(d)), d, tier)

@dataclass(frozen=True)
class Placement:
    """Why one memory sits at its tier: every number that decided it."""

    similarity: float
    decay: float
    penalty: float
    score: float
    theta1: float
    theta2: float
    theta3: float
    floor: Tier
    tier_by_score: Tier
    tier: Tier

    @property
    def reason(self) -> str:
        band = {
            Tier.FULL: f"L = {self.score:.3f} ≥ θ1 = {self.theta1:.3f}",
            Tier.SUMMARY: f"θ1 = {self.theta1:.3f} > L = {self.score:.3f} ≥ θ2 = {self.theta2:.3f}",
            Tier.HEADLINE: f"θ2 = {self.theta2:.3f} > L = {self.score:.3f} ≥ θ3 = {self.theta3:.3f}",
            Tier.OUT: f"L = {self.score:.3f} < θ3 = {self.theta3:.3f}",
        }[self.tier_by_score]
        text = f"{band}, so the score alone gives {self.tier_by_score.name}"
        if self.tier > self.tier_by_score:
            text += f"; its tier floor lifts it to {self.tier.name}"
        elif self.floor > Tier.OUT:
            text += f" (its floor, {self.floor.name}, does not bind)"
        if self.penalty > 0:
            text += f"; the exclusion penalty took {self.penalty:.3f} off L"
        return text + "."

    def to_dict(self) -> dict[str, object]:
        return {
            "similarity": self.similarity,
            "decay": self.decay,
            "penalty": self.penalty,
            "score": self.score,
            "thresholds": [self.theta1, self.theta2, self.theta3],
            "floor": self.floor.name,
            "tier_by_score": self.tier_by_score.name,
            "tier": self.tier.name,
            "reason": self.reason,
        }


def explain(
    s: float,
    t_days: float,
    retrieval_count: int,
    floor: int,
    params: Params,
    penalty: float = 0.0,
) -> Placement:
    """The placement of one memory, computed by the same functions as ``score_all``."""
    scored = score_all(
        np.array([s]),
        np.array([t_days]),
        np.array([retrieval_count]),
        np.array([floor]),
        params,
        penalty=np.array([penalty]) if penalty else None,
    )
    by_score = tiers(scored.score, params)[0]
    return Placement(
        similarity=float(scored.similarity[0]),
        decay=float(scored.decay[0]),
        penalty=float(scored.penalty[0]),
        score=float(scored.score[0]),
        theta1=params.theta1,
        theta2=params.theta2,
        theta3=params.theta3,
        floor=Tier(int(floor)),
        tier_by_score=Tier(int(by_score)),
        tier=Tier(int(scored.tier[0])),
    )
