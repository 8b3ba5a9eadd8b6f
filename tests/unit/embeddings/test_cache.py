from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from esbridge.embeddings.cache import (
    FILE_NAME,
    EmbeddingCache,
    decode_vector,
    default_cache_dir,
    encode_vector,
    text_key,
)
from esbridge.errors import EmbeddingError

# Values exactly representable in float32, so a round trip must give them back unchanged.
VECTOR = [0.5, -0.25, 1.0, 0.0]


def test_text_key_is_sha256_of_the_utf8_text() -> None:
    # sha256(b"abc"), a published test vector
    assert text_key("abc").hex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert text_key("é") != text_key("e")
    assert len(text_key("\ud800")) == 32  # a lone surrogate still gets a key


def test_vectors_are_little_endian_float32() -> None:
    assert encode_vector([1.0, -2.0]) == bytes.fromhex("0000803f000000c0")
    assert decode_vector(encode_vector(VECTOR)) == VECTOR


def test_put_then_get_round_trips_per_model(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path) as cache:
        cache.put_many("model-a", [(text_key("x"), VECTOR)])
        assert cache.get_many("model-a", [text_key("x"), text_key("y")], 4) == {text_key("x"): VECTOR}
        assert cache.get_many("model-b", [text_key("x")], 4) == {}
        assert cache.count() == cache.count("model-a") == 1


def test_a_row_of_another_length_is_a_miss(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path) as cache:
        cache.put_many("m", [(text_key("x"), VECTOR)])
        assert cache.get_many("m", [text_key("x")], 3) == {}


def test_vectors_persist_across_opens_and_replace_on_rewrite(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path) as cache:
        cache.put_many("m", [(text_key("x"), VECTOR)])
    with EmbeddingCache(tmp_path) as cache:
        assert cache.get_many("m", [text_key("x")], 4) == {text_key("x"): VECTOR}
        cache.put_many("m", [(text_key("x"), [1.0, 1.0, 1.0, 1.0])])
        assert cache.get_many("m", [text_key("x")], 4) == {text_key("x"): [1.0, 1.0, 1.0, 1.0]}
        assert cache.count("m") == 1


def test_the_file_is_in_wal_mode_with_one_table(tmp_path: Path) -> None:
    EmbeddingCache(tmp_path / "nested" / "dir").close()
    db = sqlite3.connect(tmp_path / "nested" / "dir" / FILE_NAME)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
        tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        assert tables == [("embedding",)]
    finally:
        db.close()


def test_a_file_that_is_no_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(EmbeddingError, match=r"embedding cache .*embeddings\.sqlite3 is unusable"):
        EmbeddingCache(tmp_path)


def test_a_damaged_cache_is_an_error_that_says_it_can_be_deleted(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path) as cache:
        cache.put_many("m", [(bytes([n]) * 32, [1.0, 2.0]) for n in range(200)])
    damaged = tmp_path / FILE_NAME
    damaged.write_bytes(damaged.read_bytes()[:3000])  # cut short, as by a full disk or a bad copy
    hint = r"malformed; it holds only vectors the model makes again: delete it"
    with pytest.raises(EmbeddingError, match=hint), EmbeddingCache(tmp_path) as cache:
        cache.get_many("m", [bytes([n]) * 32 for n in range(200)], 2)
    damaged.unlink()
    with EmbeddingCache(tmp_path) as cache:
        assert cache.count() == 0


def test_a_cache_from_a_newer_esbridge_is_refused(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / FILE_NAME)
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(EmbeddingError, match="schema version 99, newer than"):
        EmbeddingCache(tmp_path)


def test_a_cache_dir_that_cannot_be_created_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(EmbeddingError, match="cannot open the embedding cache"):
        EmbeddingCache(tmp_path / "file" / "sub")


def test_default_dir_follows_xdg_cache_home_else_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "esbridge" / "embeddings"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "esbridge" / "embeddings"


def test_a_configured_dir_under_the_home_directory_is_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # `cache_dir = "~/vectors"` once made a folder named "~" in the working directory.
    from esbridge.config import load_settings

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ESBRIDGE_EMBEDDING__CACHE_DIR", "~/vectors")
    with EmbeddingCache(load_settings().embedding.cache_dir) as cache:
        cache.put_many("m", [(text_key("solar"), VECTOR)])
    assert (tmp_path / "home" / "vectors" / "embeddings.sqlite3").is_file()
    assert not Path("~").exists()
