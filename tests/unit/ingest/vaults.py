"""Small hand-written vaults for the Markdown source tests."""

from __future__ import annotations

from pathlib import Path

from esbridge.ingest.markdown import read_vault
from esbridge.ingest.model import Document, Problem


def write_vault(root: Path, files: dict[str, str | bytes]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def read_documents(root: Path) -> dict[str, Document]:
    items = list(read_vault(root))
    problems = [item for item in items if isinstance(item, Problem)]
    assert not problems, problems
    return {item.doc_id: item for item in items if isinstance(item, Document)}


def one_note(tmp_path: Path, text: str, name: str = "note.md") -> Document:
    return read_documents(write_vault(tmp_path, {name: text}))[name.removesuffix(".md")]
