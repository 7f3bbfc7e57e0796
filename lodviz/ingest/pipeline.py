"""The write pipeline: validated inputs in, rows ready for the store out.

Compression, the choice of what to embed, embedding, a long memory's passages
(``lodviz.passages``: cut from its own text, embedded with the same model),
and the conflict candidates of a batch. ``Memory`` runs it for the records
whose content hash is new and hands the rows to its store in one transaction.

A text the model reads whole is read once: its vector and the vectors of the
sentences the compressor ranks come from the same pass (``compress_and_embed``,
``lodviz.ingest.pooling``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import cast

import numpy as np

from lodviz import conflicts as conflict_rules
from lodviz import passages as cutting
from lodviz import scoring
from lodviz.ingest.compress import Compressed, Compressor, RanksSentences
from lodviz.ingest.embed import Embedder
from lodviz.ingest.inputs import MemoryInput
from lodviz.records import Columns, ConflictLink, MemoryRecord, NewMemory, Passages
from lodviz.tokens import TokenCounter


def fits_window(texts: Sequence[str], embedder: Embedder, window_counter: TokenCounter | None) -> list[bool]:
    """Per text, whether the model reads it whole (its window, less its two special tokens).

    ``window_counter`` counts in the model's tokens (None: about three characters a token).
    """
    window = int(getattr(embedder, "max_tokens", 256)) - 2
    if window_counter is not None:
        lengths = window_counter.count_many(list(texts))
    else:
        lengths = np.fromiter((len(t) // 3 for t in texts), dtype=np.int64, count=len(texts))
    return [bool(n <= window) for n in lengths]


def texts_to_embed(texts: Sequence[str], summaries: Sequence[str], embed_field: str, embedder: Embedder, window_counter: TokenCounter | None) -> list[str]:
    """Per memory, the text its vector is made from (``embed_field``).

    "auto" embeds the full text where the model reads it whole and the
    summary where the model would cut the text short: a truncated text's
    vector says nothing of what comes after the cut, while the summary covers
    it all.
    """
    if embed_field == "summary":
        return list(summaries)
    if embed_field == "full":
        return list(texts)
    whole = fits_window(texts, embedder, window_counter)
    return [text if fits else summary for text, summary, fits in zip(texts, summaries, whole)]


def compress_and_embed(
    texts: Sequence[str], compressor: Compressor, embedder: Embedder, embed_field: str, window_counter: TokenCounter | None
) -> tuple[list[Compressed], np.ndarray]:
    """Each text's summary and headline, and its memory's vector (``texts_to_embed``).

    With a model that pools spans (``embed_with_spans``) and a compressor that
    ranks sentences (``RanksSentences``), the texts embedded whole are embedded
    first, once: their own vectors and their sentences' vectors come from that
    one pass (``lodviz.ingest.pooling``); only the texts too long for the
    window embed their summaries, after compression. Their vectors are the
    ones ``embed`` gives. Otherwise: compress (which embeds the sentences it
    ranks), then embed what each memory keeps.
    """
    pooling = getattr(embedder, "embed_with_spans", None)
    ranks = getattr(compressor, "sentence_spans", None)
    if pooling is None or ranks is None or embed_field == "summary":
        compressed = compressor.compress(texts)
        return compressed, embedder.embed(texts_to_embed(texts, [c.summary for c in compressed], embed_field, embedder, window_counter))
    read_whole = [fits or embed_field == "full" for fits in fits_window(texts, embedder, window_counter)]
    whole = [i for i, yes in enumerate(read_whole) if yes]
    rest = [i for i, yes in enumerate(read_whole) if not yes]
    spans = ranks(texts)
    own, pooled = pooling([texts[i] for i in whole], [spans[i] for i in whole])
    sentence_vectors: list[np.ndarray | None] = [None] * len(texts)
    for j, i in enumerate(whole):
        sentence_vectors[i] = pooled[j]
    compressed = cast(RanksSentences, compressor).compress(texts, sentence_vectors=sentence_vectors)
    vectors = np.zeros((len(texts), own.shape[1]), dtype=np.float32)  # (0, dimension) when no text is read whole
    vectors[whole] = own
    if rest:
        vectors[rest] = embedder.embed([compressed[i].summary for i in rest])
    return compressed, vectors


def prepare(
    fresh: Sequence[tuple[MemoryInput, str]],
    compressor: Compressor,
    embedder: Embedder,
    embed_field: str,
    window_counter: TokenCounter | None,
) -> tuple[list[NewMemory], np.ndarray]:
    """Compress and embed new records (each with its content hash), and cut and embed the passages of the
    long ones: the rows to insert and their vectors."""
    compressed, vectors = compress_and_embed([r.text for r, _ in fresh], compressor, embedder, embed_field, window_counter)
    spans, passage_vectors = embed_passages([r.text for r, _ in fresh], embedder)
    now = datetime.now(UTC)
    rows = [
        NewMemory(
            text=r.text,
            summary=c.summary,
            headline=c.headline,
            embedding=v,
            embedding_model=embedder.name,
            content_hash=h,
            created_at=r.created_at or now,
            agent_id=r.agent_id,
            visibility=r.visibility,
            kind=r.kind,
            source=r.source,
            metadata=r.metadata,
            retrieval_count=r.retrieval_count,
            last_retrieved_at=r.last_retrieved_at,
            floor=r.floor,
            passages=tuple(cut),
            passage_vectors=pv,
        )
        for (r, h), c, v, cut, pv in zip(fresh, compressed, vectors, spans, passage_vectors)
    ]
    return rows, vectors


def embed_passages(texts: Sequence[str], embedder: Embedder) -> tuple[list[list[cutting.Span]], list[np.ndarray | None]]:
    """Per text, its passages' spans (``lodviz.passages.cut``: [] for a short one) and their vectors (None for none).

    One embedding call for every passage of the batch, apart from the call
    for the memories' own texts: a model batches its inputs by length, so
    passages in that call would move the memories' vectors (by float rounding,
    ~2e-7), and a batch of short memories must get exactly the vectors it got
    before passages existed. A short batch makes no call at all.
    """
    spans = [cutting.cut(text) for text in texts]
    flat = [piece for text, cut in zip(texts, spans) for piece in cutting.texts(text, cut)]
    if not flat:
        return spans, [None] * len(texts)
    vectors = embedder.embed(flat)
    out: list[np.ndarray | None] = []
    at = 0
    for cut in spans:
        out.append(vectors[at : at + len(cut)] if cut else None)
        at += len(cut)
    return spans, out


def conflict_links(
    records: Sequence[MemoryInput],
    vectors: np.ndarray,
    passage_vectors: Sequence[np.ndarray | None],
    state: Columns,
    stored: np.ndarray,
    stored_passages: Passages,
    fetch: Callable[[list[int]], dict[int, MemoryRecord]],
) -> list[ConflictLink]:
    """Conflict candidates of a batch (``lodviz.conflicts``): against what each new memory's
    agent can see (``state``, its vectors ``stored`` and their passages; ``fetch`` reads stored
    records), and against the batch's other memories.

    Two memories share a subject when the memories or any of their passages are
    close (``conflicts.subject_similarity``), so a long document's one paragraph
    on a lot or a deadline meets the short note that states it otherwise.
    """
    unit = scoring.normalize_rows(vectors)
    mine = [None if p is None else scoring.normalize_rows(p) for p in passage_vectors]
    candidates: dict[int, list[tuple[int, float, bool]]] = {}  # new index -> (other, similarity, other is new)
    if len(state):
        rows = state.rows_or_missing(stored_passages.owner)  # -1: a memory written since ``state``
        for key in sorted({(r.agent_id, r.visibility) for r in records}):
            members = [i for i, r in enumerate(records) if (r.agent_id, r.visibility) == key]
            allowed = np.flatnonzero(state.visible_to(None if key[1] == "shared" else key[0]))
            keep = np.isin(rows, allowed)
            similar = conflict_rules.subject_similarity(
                unit[members], [mine[i] for i in members], stored[allowed], stored_passages.vectors[keep],
                np.searchsorted(allowed, rows[keep]),  # each kept passage's column among ``allowed``
            )
            for i, j, sim in conflict_rules.most_similar(similar):
                candidates.setdefault(members[i], []).append((int(state.ids[allowed[j]]), sim, False))
    for i in range(1, len(records)):
        earlier = [j for j in range(i) if records[j].agent_id == records[i].agent_id or "shared" in (records[i].visibility, records[j].visibility)]
        if not earlier:
            continue
        theirs = [mine[j] for j in earlier]
        rows = np.concatenate([np.full(len(p), at) for at, p in enumerate(theirs) if p is not None] or [np.zeros(0, dtype=np.int64)]).astype(np.int64)
        flat = np.concatenate([p for p in theirs if p is not None]) if len(rows) else np.zeros((0, unit.shape[1]), dtype=unit.dtype)
        similar = conflict_rules.subject_similarity(unit[i : i + 1], [mine[i]], unit[earlier], flat, rows)
        for _, b, sim in conflict_rules.most_similar(similar):
            candidates.setdefault(i, []).append((earlier[b], sim, True))
    if not candidates:
        return []
    # The most similar of both kinds: the stored ones and the batch's.
    candidates = {i: sorted(found, key=lambda c: -c[1])[: conflict_rules.CANDIDATES] for i, found in candidates.items()}
    old_records = fetch(sorted({other for found in candidates.values() for other, _, is_new in found if not is_new}))
    links: list[ConflictLink] = []
    for index, found in sorted(candidates.items()):
        others = [
            (other, sim, is_new, conflict_rules.Written.of(records[other] if is_new else old_records[other]))
            for other, sim, is_new in found
            if is_new or other in old_records
        ]
        reasons = conflict_rules.judge(conflict_rules.Written.of(records[index]), [(written, sim) for _, sim, _, written in others])
        for at, reason in sorted(reasons.items()):
            other, sim, is_new, _ = others[at]
            links.append(ConflictLink(index, other, sim, reason, other_is_new=is_new))
    return links


__all__ = ["prepare", "compress_and_embed", "fits_window", "texts_to_embed", "embed_passages", "conflict_links"]
