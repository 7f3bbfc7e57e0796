"""The DuckDB store: round trips, migrations, atomic batches, its in-process cache."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from lodviz.errors import StoreError
from lodviz.store.duckdb import _STATE_SQL, MIGRATIONS, DuckDBStore, _state_from_batches, apply_migrations
from tests.store.test_store import T0, memory


def rows(store: DuckDBStore, query: str) -> list[tuple]:
    """Read the file's tables directly: these tests pin the store's own layout
    (after applying the journal, which a store does before any read of its own)."""
    store._settle()
    return store._con.execute(query).fetchall()



def old_store(tmp_path, upto: str, *statements: str):
    """A store file left at migration ``upto`` by an older lodviz, with ``statements`` run on it."""
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    apply_migrations(con, upto=upto)
    for statement in statements:
        con.execute(statement)
    con.close()
    return path


OLD_MEMORY = (
    "INSERT INTO memories (id, text, summary, headline, embedding, embedding_model, content_hash, "
    "created_at, agent_id, visibility, kind) VALUES (1, 'old', 'o', 'o', [1.0, 0.0], 'm', 'h', "
    "TIMESTAMP '2024-05-01 00:00:00', 'a', 'private', 'note')"
)


def test_an_old_file_is_migrated_on_open_and_keeps_its_data(tmp_path):
    path = old_store(tmp_path, "001_initial", OLD_MEMORY)
    with DuckDBStore(path) as store:
        applied = [r[0] for r in rows(store, "SELECT name FROM _migrations ORDER BY name")]
        assert applied == [name for name, _ in MIGRATIONS]
        assert store.get([1])[1].text == "old"
        assert np.isnan(store.state().x[0])  # the layout columns arrived empty
        assert store.profiles() == {}
        assert rows(store, "SELECT retrieval_count, last_retrieved_at FROM memories_with_usage") == [(0, None)]


def test_a_store_from_before_passages_gets_the_table_empty(tmp_path):
    from tests.store.test_store import long_memory

    path = old_store(tmp_path, "009_tokens", OLD_MEMORY)
    with DuckDBStore(path) as store:
        assert rows(store, "SELECT count(*) FROM passages") == [(0,)]
        assert len(store.passages()) == 0 and store.get([1])[1].text == "old"
    with DuckDBStore(path) as store:
        m = long_memory(2)  # in the old memory's two dimensions
        m.embedding, m.passage_vectors = m.embedding[:2] + 1, m.passage_vectors[:, :2]
        (new,) = store.insert([m], None)
        assert store.passages().owner.tolist() == [new] * 3 and store.passages().vectors.shape == (3, 2)


def test_usage_history_moves_to_its_own_table_on_migration(tmp_path):
    path = old_store(
        tmp_path,
        "003_layout",
        "INSERT INTO memories (id, text, summary, headline, embedding, embedding_model, content_hash, "
        "created_at, last_retrieved_at, retrieval_count, agent_id, visibility, kind) VALUES "
        "(1, 'used', 'u', 'u', [1.0, 0.0], 'm', 'h1', TIMESTAMP '2024-05-01', TIMESTAMP '2024-06-01', 7, 'a', 'private', 'note'), "
        "(2, 'unused', 'u', 'u', [0.0, 1.0], 'm', 'h2', TIMESTAMP '2024-05-01', NULL, 0, 'a', 'private', 'note')",
    )
    with DuckDBStore(path) as store:
        records = store.get([1, 2])
        assert records[1].retrieval_count == 7 and records[1].last_retrieved_at.year == 2024
        assert records[2].retrieval_count == 0 and records[2].last_retrieved_at is None
        assert store.state().retrieval_count.tolist() == [7, 0]


def _usage(store: DuckDBStore) -> list[tuple]:
    return rows(store, "SELECT id, retrieval_count, last_retrieved_at FROM memories_with_usage ORDER BY id")


def test_retrievals_count_before_and_after_the_log_is_folded(tmp_path):
    path = tmp_path / "m.duckdb"
    early, late = datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC)
    with DuckDBStore(path) as store:
        ids = store.insert([memory(1), memory(2, retrieval_count=5, last_retrieved_at=early)], None)
        store.touch(ids, late, None)
        assert rows(store, "SELECT count(*) FROM retrievals") == [(2,)]
        logged = _usage(store)
        record = store.get([ids[1]])[ids[1]]
        assert (record.retrieval_count, record.last_retrieved_at) == (6, late)
    naive_late = late.replace(tzinfo=None)
    assert logged == [(ids[0], 1, naive_late), (ids[1], 6, naive_late)]
    with DuckDBStore(path) as store:  # opening folds the log into usage
        assert rows(store, "SELECT count(*) FROM retrievals") == [(0,)]
        assert _usage(store) == logged
        assert store.state().retrieval_count.tolist() == [1, 6]


def test_a_retrieval_log_without_order_is_kept_by_the_migration_that_adds_it(tmp_path):
    path = old_store(
        tmp_path,
        "005_retrieval_log",
        OLD_MEMORY,
        "INSERT INTO usage VALUES (1, 3, TIMESTAMP '2024-06-01')",
        "INSERT INTO retrievals VALUES (1, TIMESTAMP '2024-07-01'), (1, TIMESTAMP '2024-08-01')",
    )
    with DuckDBStore(path) as store:
        record = store.get([1])[1]
        assert (record.retrieval_count, record.last_retrieved_at) == (5, datetime(2024, 8, 1, tzinfo=UTC))


def test_a_long_retrieval_log_is_folded_without_reopening():
    store = DuckDBStore()
    store.FOLD_AT = 4
    ids = store.insert([memory(i) for i in range(3)], None)
    store.touch(ids, T0, None)
    assert rows(store, "SELECT count(*) FROM retrievals") == [(3,)]
    store.touch(ids[:1], T0, None)
    assert rows(store, "SELECT count(*) FROM retrievals") == [(0,)]
    assert [count for _, count, _ in _usage(store)] == [2, 1, 1]


@pytest.mark.parametrize("kind", ["float32", "float16", "int8"])
def test_the_first_load_puts_batches_arriving_in_any_order_in_id_order(kind):
    # DuckDB streams the state in parallel, so batches can come out of id order.
    store = DuckDBStore()
    store.insert([memory(i) for i in range(10)], None)
    table = store._con.sql(_STATE_SQL.format(where="", embedding=", m.embedding")).to_arrow_table()
    table = table.take(pa.array([9, 2, 5, 0, 7, 1, 8, 3, 6, 4]))  # out of order across and within batches
    ids = np.asarray(table.column("id").to_numpy())
    batches = table.to_batches(max_chunksize=3)
    state, matrix = _state_from_batches(pa.RecordBatchReader.from_batches(table.schema, batches), np.sort(ids), kind)
    assert state.ids.tolist() == sorted(ids.tolist())
    assert matrix.exact[:10].argmax(axis=1).tolist() == [i % 4 for i in range(10)]  # memory(i) points along axis i % 4
    if kind != "float32":  # the compact copy is filled row for row too
        assert matrix.codes is not None and matrix.codes[:10].argmax(axis=1).tolist() == [i % 4 for i in range(10)]
    assert state.agent_names == ["agent-a"]


def test_a_file_that_is_not_a_store_gives_a_clear_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(StoreError, match="cannot open|not a lodviz store"):
        DuckDBStore(path)


def test_a_missing_directory_gives_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="no such directory"):
        DuckDBStore(tmp_path / "nope" / "m.duckdb")




def test_a_warmed_store_counts_summary_terms_as_reading_the_summaries_does(mem):
    """The term index a warm builds gives the counts the summaries give, for memories written
    before it, after it, and forgotten after it."""
    from lodviz.store.base import Store

    first = mem.add_many([{"text": f"The supplier shipped lot {i} late to Tbilisi.", "agent_id": "ops"} for i in range(40)]).ids
    store = mem._store
    wanted = ["supplier", "tbilisi", "lot", "forgotten", "1"]
    mem.warm()
    assert store._load().terms is not None and len(store._load().terms) == 40
    later = mem.add_many([{"text": f"Invoice {i} for the supplier was paid.", "agent_id": "ops"} for i in range(5)]).ids
    mem.forget(first[3])
    ids = [*first, *later]
    tf, lengths = store.term_counts(ids, wanted)
    assert len(store._load().terms) == 45
    expected_tf, expected_lengths = Store.term_counts(store, ids, wanted)  # the summaries, read and split
    assert np.array_equal(tf, expected_tf) and np.array_equal(lengths, expected_lengths)
    assert tf[0].sum() == 44 and tf[3][3] == 1  # the forgotten memory counts its erased text, not its old one


@pytest.mark.parametrize("as_objects", [True, False], ids=["python-strings", "arrow"])
@pytest.mark.parametrize("full_in_memory", [True, False], ids=["full-texts-in-memory", "full-texts-from-file"])
def test_texts_in_memory_hand_out_each_tier_in_the_order_asked(tmp_path, monkeypatch, as_objects, full_in_memory):
    # Both ways of holding the texts (Python strings up to TEXTS_AS_OBJECTS memories, Arrow beyond),
    # with full texts in memory or read from the file, across inserts that add and merge chunks.
    monkeypatch.setattr(DuckDBStore, "TEXTS_AS_OBJECTS", 10**9 if as_objects else 0)
    monkeypatch.setattr(DuckDBStore, "FULL_TEXTS_IN_MEMORY", 10**9 if full_in_memory else 0)
    store = DuckDBStore(str(tmp_path / "t.duckdb"))
    ids = store.insert([memory(i, source=f"src-{i}") for i in range(40)], None)
    store.texts(ids[:1], [1])  # the first read loads them
    for i in range(40, 80):  # one chunk per insert: more than the 16 that trigger a merge
        ids += store.insert([memory(i, source=None if i % 7 == 0 else f"src-{i}")], None)
    assert store._load().short_texts.objects is as_objects
    picked = [ids[j] for j in (79, 3, 41, 3, 60, 0, 55)]  # out of order, one twice, old and new chunks
    tiers = [1, 2, 3, 3, 2, 1, 3]
    texts, sources = store.texts(picked, tiers)
    expected = [(("headline", "summary", "full text")[t - 1] + f" {ids.index(m)}") for m, t in zip(picked, tiers)]
    assert texts == expected
    assert sources == [None if ids.index(m) % 7 == 0 and ids.index(m) >= 40 else f"src-{ids.index(m)}" for m in picked]
    assert store.contents(picked, tiers) == {m: (text, source) for m, text, source in zip(picked, texts, sources)}
    store.close()


def test_a_cold_big_stores_first_reads_take_their_texts_from_the_file_then_all_are_loaded(tmp_path, monkeypatch):
    monkeypatch.setattr(DuckDBStore, "TEXTS_BY_ID_FROM", 10)
    monkeypatch.setattr(DuckDBStore, "TEXT_READS_BY_ID", 2)
    store = DuckDBStore(str(tmp_path / "t.duckdb"))
    ids = store.insert([memory(i, source=None if i % 3 else f"src-{i}") for i in range(40)], None)
    picked, tiers = [ids[j] for j in (7, 0, 33, 7)], [3, 1, 2, 1]
    answers = [store.texts(picked, tiers) for _ in range(2)]
    assert store._load().short_texts is None
    answers.append(store.texts(picked, tiers))
    assert store._load().short_texts is not None  # the third read loaded them
    assert answers[0] == answers[1] == answers[2]
    assert answers[0] == (["full text 7", "headline 0", "summary 33", "headline 7"], [None, "src-0", "src-33", None])
    store.close()


def test_a_warm_up_reads_the_short_texts_without_holding_the_store(tmp_path):
    store = DuckDBStore(str(tmp_path / "t.duckdb"))
    ids = store.insert([memory(i) for i in range(30)], None)
    store._load()
    held: list[bool] = []
    read = store._load().short_from

    def short_from(*args, **kwargs):
        held.append(store._lock._is_owned())  # RLock's own check: is this thread holding it?
        return read(*args, **kwargs)

    store._load().short_from = short_from
    store.warm()
    assert held == [False] and store._load().short_texts is not None
    assert store.texts([ids[4], ids[9]], [1, 2]) == (["headline 4", "summary 9"], [None, None])
    store.close()


def test_short_texts_read_while_a_memory_is_forgotten_are_not_used(tmp_path):
    from lodviz.store.base import AuditEvent
    from lodviz.store.sql import FORGOTTEN

    store = DuckDBStore(str(tmp_path / "t.duckdb"))
    ids = store.insert([memory(i) for i in range(30)], None)
    cache = store._load()
    read = cache.short_from

    def short_from(*args, **kwargs):
        texts = read(*args, **kwargs)  # read before the forget below: it still holds the text
        store.forget(ids[4], AuditEvent(action="forget", actor="test"))
        return texts

    cache.short_from = short_from
    store._short_texts_aside()
    assert cache.short_texts is None
    assert store.texts([ids[4]], [2])[0] == [FORGOTTEN]
    store.close()
