"""Passages on the write path: cut and embedded when a long memory is written, kept with it in both backends,
carried by an export and by ``lodviz migrate``, gone with a forgotten memory, whole after a crash.

Real temporary stores and the model-free ``HashEmbedder``: these pin what is
kept, not what a search finds with it.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import lodviz
from lodviz import history
from lodviz.cli import cli
from lodviz.passages import cut, texts
from lodviz.scoring import normalize_rows
from lodviz.store import open_store
from lodviz.testing import HashEmbedder
from lodviz.timeline import Timeline

ROOT = Path(__file__).resolve().parents[1]
SPEAKERS = ("Ada", "Ben")


def session(n: int, turns: int = 24) -> str:
    """A transcript of ``turns`` turns (one line each): a long memory, cut at its turns."""
    return "\n".join(
        f"{SPEAKERS[t % 2]}: In session {n} turn {t} we went over the supplier audit of plant {n * 31 + t}, "
        f"the {t + 3} late lots and who follows up."
        for t in range(turns)
    )


def short(n: int) -> str:
    return f"Ada: plant {n} shipped two lots late."


class Counting(HashEmbedder):
    """``HashEmbedder`` that keeps every batch it was asked to embed."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls: list[list[str]] = []

    def embed(self, texts_: list[str]) -> np.ndarray:  # type: ignore[override]
        self.calls.append(list(texts_))
        return super().embed(texts_)


def expected(embedder: HashEmbedder, text: str) -> tuple[list[list[int]], np.ndarray]:
    spans = cut(text)
    return [list(s) for s in spans], normalize_rows(embedder.embed(texts(text, spans)))


def test_a_long_memory_is_written_with_its_passages_and_a_short_one_without(tmp_path):
    embedder = HashEmbedder(64)
    mem = lodviz.open(tmp_path / "m.duckdb", embedder=embedder)
    long_text = session(1)
    report = mem.add_many([{"text": short(1)}, {"text": long_text, "kind": "session"}, {"text": short(2)}])
    passages = mem._store.passages()
    long_id = report.added[1]
    spans, vectors = expected(embedder, long_text)
    assert len(spans) == 24  # one passage per turn
    assert set(passages.owner.tolist()) == {long_id}
    assert passages.position.tolist() == list(range(24))
    assert passages.spans.tolist() == spans
    assert np.allclose(passages.vectors, vectors, atol=1e-6)
    assert np.allclose(np.linalg.norm(passages.vectors, axis=1), 1.0, atol=1e-6)
    text = mem.expand(long_id).text
    assert [text[a:b] for a, b in spans] == long_text.splitlines()
    mem.close()


def test_short_memories_cost_no_embedding_and_get_exactly_the_vectors_they_got_before(tmp_path):
    embedder = Counting()
    mem = lodviz.open(tmp_path / "m.duckdb", embedder=embedder)
    mem.add_many([{"text": short(i)} for i in range(5)])
    assert [len(call) for call in embedder.calls] == [5]  # the memories' texts, once; no passage call
    assert len(mem._store.passages()) == 0
    _, stored = mem.snapshot()
    assert np.array_equal(stored, normalize_rows(HashEmbedder(64).embed([short(i) for i in range(5)])))
    # A long memory in the batch adds one call, for its passages alone: the others' call is what it was.
    embedder.calls.clear()
    mem.add_many([{"text": short(i)} for i in range(5, 8)] + [{"text": session(2)}])
    memory_call = embedder.calls[-2]
    assert memory_call[:3] == [short(i) for i in range(5, 8)] and len(memory_call) == 4
    assert embedder.calls[-1] == texts(session(2), cut(session(2)))
    mem.close()


def test_a_memorys_passages_depend_on_its_own_text_alone(tmp_path):
    alone = lodviz.open(tmp_path / "a.duckdb", embedder=HashEmbedder(64))
    alone.add_many([{"text": session(3)}])
    together = lodviz.open(tmp_path / "b.duckdb", embedder=HashEmbedder(64))
    together.add_many([{"text": session(4)}, {"text": short(1)}, {"text": session(3)}])
    a, b = alone._store.passages(), together._store.passages()
    mine = b.of([3])
    assert mine.spans.tolist() == a.spans.tolist() and np.array_equal(mine.vectors, a.vectors)
    assert len(b.of([1])) == 24 and len(b.of([2])) == 0
    alone.close()
    together.close()


def test_forget_takes_the_memorys_passages(tmp_path):
    mem = lodviz.open(tmp_path / "m.duckdb", embedder=HashEmbedder(64))
    first, second = mem.add_many([{"text": session(1)}, {"text": session(2)}]).added
    mem.forget(first, reason="asked to")
    assert set(mem._store.passages().owner.tolist()) == {second}
    mem.close()
    with open_store(str(tmp_path / "m.duckdb"), read_only=True) as store:
        assert {row[0] for batch in store.read_table("passages") for row in batch} == {second}
        assert set(store.passages().owner.tolist()) == {second}


def test_an_export_carries_the_spans_and_ingesting_it_cuts_the_same_passages(tmp_path):
    mem = lodviz.open(tmp_path / "m.duckdb", embedder=HashEmbedder(64))
    mem.add_many([{"text": short(1)}, {"text": session(5), "kind": "session"}])
    records = list(mem.export_records())
    assert records[0].passages == [] and records[1].passages == [list(s) for s in cut(session(5))]
    frame = mem.export_frame()
    assert frame["passages"].tolist() == [[], [list(s) for s in cut(session(5))]]
    assert "passages" not in mem.expand(records[1].id).to_dict()  # only an export asks for them
    mem.close()
    env = {"LODVIZ_EMBEDDING_MODEL": "hash:64"}
    for fmt in ("jsonl", "csv"):
        out = tmp_path / f"export.{fmt}"
        result = CliRunner(env=env).invoke(cli, ["--store", str(tmp_path / "m.duckdb"), "export", "--format", fmt, "-o", str(out)])
        assert result.exit_code == 0, result.output
        if fmt == "jsonl":
            rows = [json.loads(line) for line in out.read_text().splitlines()]
            assert [row["passages"] for row in rows] == [[], [list(s) for s in cut(session(5))]]
        copy = tmp_path / f"copy-{fmt}.duckdb"
        result = CliRunner(env=env).invoke(cli, ["--store", str(copy), "ingest", str(out)])
        assert result.exit_code == 0 and "Added 2 memories" in result.output, result.output
        with open_store(str(copy), read_only=True) as store:
            assert store.passages().spans.tolist() == [list(s) for s in cut(session(5))]


def test_a_replayed_search_sees_the_passages_of_the_memories_that_existed_then(tmp_path):
    # Passages never change once written, so the past's passages are the rows of the memories live then.
    mem = lodviz.open(tmp_path / "m.duckdb", embedder=HashEmbedder(64))
    (before,) = mem.add_many([{"text": session(1), "agent_id": "ops"}]).added
    mem.search("supplier audit plant", agent_id="ops")
    (after,) = mem.add_many([{"text": session(2), "agent_id": "ops"}]).added
    event = mem.audit(actions=["search"])[0]
    past, _ = Timeline(mem._store).snapshot(history.Moment(before_event=int(event.id or 0)))
    then = mem._store.passages().of(past.ids[~past.forgotten])
    assert set(then.owner.tolist()) == {before} and len(mem._store.passages().of([after])) == 24
    assert mem.replay(int(event.id or 0)).agrees
    mem.close()


@pytest.mark.slow
def test_passages_survive_migration_to_postgres_and_back_identical(tmp_path, pg_url):
    source, back = tmp_path / "source.duckdb", tmp_path / "back.duckdb"
    mem = lodviz.open(source, embedder=HashEmbedder(64))
    ids = mem.add_many([{"text": session(i)} if i % 2 else {"text": short(i)} for i in range(6)]).added
    mem.forget(ids[1], reason="gone before the move")
    mem.close()
    runner = CliRunner()
    for src, dst in ((str(source), pg_url), (pg_url, str(back))):
        result = runner.invoke(cli, ["migrate", src, dst])
        assert result.exit_code == 0, result.output
        assert "passages: 48 rows copied" in result.output and "every table has the same rows and checksums" in result.output

    def rows(location: str) -> list[tuple]:
        with open_store(location, read_only=True) as store:
            return [row for batch in store.read_table("passages") for row in batch]

    original = rows(str(source))
    assert len(original) == 48 and {row[0] for row in original} == {ids[3], ids[5]}
    for location in (pg_url, str(back)):
        copied = rows(location)
        assert [row[:4] for row in copied] == [row[:4] for row in original]
        assert all(np.array_equal(a[4], b[4]) for a, b in zip(copied, original))
        with open_store(location, read_only=True) as store:
            assert store.passages().owner.tolist() == [row[0] for row in original]
    moved = lodviz.open(back, embedder=HashEmbedder(64))
    (new,) = moved.add_many([{"text": session(9)}]).added
    assert moved._store.passages().owner.tolist()[-24:] == [new] * 24
    moved.close()


def import_until_killed(path: str, seed: int) -> None:
    """What the crash test's process does until it is killed: batches of long and short memories, and searches."""
    rng = random.Random(seed)
    mem = lodviz.open(path, embedder=HashEmbedder(64), actor="crash-worker")
    print("ready", flush=True)
    for i in itertools.count():
        if i % 2 == 0:  # one batch, one transaction
            mem.add_many([{"text": session(seed * 1000 + i * 50 + j, rng.randrange(8, 30)) if rng.random() < 0.4
                           else short(seed * 1000 + i * 50 + j), "agent_id": "ops"} for j in range(rng.randrange(5, 40))])
        else:  # searches: their writes go through the journal
            for _ in range(3):
                mem.search(f"supplier audit plant {rng.randrange(99)}", agent_id="ops", k=20)


@pytest.mark.slow
def test_a_killed_import_leaves_every_memory_with_all_its_passages_or_none_and_no_memory(tmp_path):
    path = tmp_path / "crash.duckdb"
    rng = random.Random(20261205)
    for run in range(8):
        code = f"from tests.test_passages_write import import_until_killed; import_until_killed({str(path)!r}, {run})"
        worker = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready", worker.stderr.read() if worker.stderr else ""
        time.sleep(rng.uniform(0.1, 1.5))
        worker.send_signal(signal.SIGKILL)
        worker.wait(30)
        mem = lodviz.open(path, embedder=HashEmbedder(64))
        try:
            passages = mem._store.passages()
            records = {r.id: r for r in mem.export_records()}
            assert set(passages.owner.tolist()) <= set(records)  # no passage without its memory
            for memory_id, record in records.items():
                assert record.passages == [list(s) for s in cut(record.text)], memory_id
            long_ids = [i for i, r in records.items() if r.passages]
            if long_ids:
                embedder = HashEmbedder(64)
                for memory_id in rng.sample(long_ids, min(3, len(long_ids))):
                    text = records[memory_id].text
                    assert np.allclose(passages.of([memory_id]).vectors, expected(embedder, text)[1], atol=1e-6)
        finally:
            mem.close()
    assert long_ids
