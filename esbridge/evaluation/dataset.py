"""The judged queries of one split of a BEIR folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from esbridge.errors import ConfigError, SourceError
from esbridge.ids import shown_path
from esbridge.ingest.beir import CORPUS_FILE, ID_FIELD, QRELS_FOLDER, read_beir_queries, read_qrels
from esbridge.ingest.json_lines import read_json_lines, record_id
from esbridge.ingest.model import Problem


@dataclass(frozen=True)
class JudgedQueries:
    queries: dict[str, str]
    """query id -> text, for every query of the split that has a positive judgement, in qrels order"""
    qrels: dict[str, dict[str, int]]
    """query id -> {doc id: relevance}, restricted to ``queries``"""


def judged_queries(folder: Path, split: str = "test", limit: int | None = None) -> JudgedQueries:
    """The split's queries that have text and at least one relevant document; the first ``limit`` of them.
    A split without any is refused (``SourceError``)."""
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be at least 1, got {limit}")
    texts = read_beir_queries(folder)
    judgements = read_qrels(folder, split)
    missing = sorted(query for query in judgements if query not in texts)
    if missing:
        raise SourceError(f"qrels/{split}.tsv names {len(missing)} queries not in queries.jsonl, e.g. {missing[0]!r}")
    chosen = [query for query, docs in judgements.items() if any(relevance > 0 for relevance in docs.values())]
    if not chosen:
        raise SourceError(
            f"{shown_path(folder / QRELS_FOLDER / f'{split}.tsv')} judges no document relevant to any query "
            "(no row with a score above 0); there is nothing to evaluate"
        )
    if limit is not None:
        chosen = chosen[:limit]
    return JudgedQueries({query: texts[query] for query in chosen}, {query: judgements[query] for query in chosen})


def outside_corpus(folder: Path, split: str, judged: JudgedQueries) -> str | None:
    """A warning naming the documents judged relevant that ``corpus.jsonl`` lacks (no configuration can find
    them, so they cap every score), or None. A line that is not a valid record still counts by its id."""
    missing = {doc for docs in judged.qrels.values() for doc, relevance in docs.items() if relevance > 0}
    for item in read_json_lines(folder / CORPUS_FILE, ID_FIELD):
        if not missing:
            break
        if isinstance(item, Problem):
            missing.discard(item.doc_id or "")
            continue
        try:
            missing.discard(record_id(item[1].get(ID_FIELD)))
        except ValueError:
            continue
    if not missing:
        return None
    shown = ", ".join(repr(doc) for doc in sorted(missing)[:3])
    return (
        f"{QRELS_FOLDER}/{split}.tsv judges {len(missing)} documents relevant that are not in {CORPUS_FILE} "
        f"(e.g. {shown}); no configuration can find them"
    )
