"""The judged queries of one split of a BEIR folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from esbridge.errors import ConfigError, SourceError
from esbridge.ids import shown_path
from esbridge.ingest.beir import (
    CORPUS_FILE,
    ID_FIELD,
    QRELS_FOLDER,
    QUERIES_FILE,
    qrels_lines,
    read_beir_queries,
    read_qrels,
)
from esbridge.ingest.json_lines import read_json_lines, record_id
from esbridge.ingest.model import Problem
from esbridge.text import is_blank


@dataclass(frozen=True)
class JudgedQueries:
    queries: dict[str, str]
    """query id -> text, for every query of the split that has a positive judgement, in qrels order"""
    qrels: dict[str, dict[str, int]]
    """query id -> {doc id: relevance}, restricted to ``queries``"""
    left_out: tuple[str, ...] = ()
    """queries of the split that judge no document above 0 (every score 0 or below), which are not evaluated"""
    blank: tuple[str, ...] = ()
    """queries of ``queries.jsonl`` without text that judge no document relevant in the split, which are skipped"""


def judged_queries(folder: Path, split: str = "test", limit: int | None = None) -> JudgedQueries:
    """The split's queries that have text and at least one relevant document; the first ``limit`` of them.
    A split without any is refused (``SourceError``), and so is a query without text that judges a document
    relevant (it would be scored 0, or dropped, either way changing the figures); one that judges none is skipped
    (``blank_warning`` counts them)."""
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be at least 1, got {limit}")
    blank_lines: dict[str, int] = {}
    texts = read_beir_queries(folder, blank_lines)
    judgements = read_qrels(folder, split)
    chosen = [query for query, docs in judgements.items() if any(relevance > 0 for relevance in docs.values())]
    judged_blank = [query for query in chosen if query in blank_lines]
    if judged_blank:
        first = min(judged_blank, key=blank_lines.__getitem__)
        raise SourceError(
            f"{shown_path(folder / QUERIES_FILE)}, line {blank_lines[first]}: query {first!r} has no text, but "
            f"{QRELS_FOLDER}/{split}.tsv judges documents relevant to it, so it cannot be evaluated "
            f"({len(judged_blank)} such {'query' if len(judged_blank) == 1 else 'queries'}); give it its text"
        )
    missing = [query for query in chosen if query not in texts]
    qrels_file = folder / QRELS_FOLDER / f"{split}.tsv"
    if missing and not texts and not blank_lines:
        raise SourceError(
            f"{shown_path(folder / QUERIES_FILE)} holds no query, but {shown_path(qrels_file)} judges documents "
            f"relevant to {len(missing)} {'query' if len(missing) == 1 else 'queries'}"
        )
    if missing:
        raise SourceError(
            f"{shown_path(qrels_file)}, line {_first_line(qrels_file, missing[0])}: query {missing[0]!r} judges a "
            f"document relevant but is not in {shown_path(folder / QUERIES_FILE)}, so it cannot be run "
            f"({len(missing)} such {'query' if len(missing) == 1 else 'queries'})"
        )
    relevant = set(chosen)
    left_out = tuple(query for query in judgements if query not in relevant and query not in blank_lines)
    if not judgements:
        raise SourceError(
            f"{shown_path(qrels_file)} holds no judgement (it is empty, or holds only its header); there is nothing "
            "to evaluate"
        )
    if not chosen:
        raise SourceError(
            f"{shown_path(qrels_file)} judges no document relevant to any query (no row with a score above 0); "
            "there is nothing to evaluate"
        )
    if limit is not None:
        chosen = chosen[:limit]
    return JudgedQueries(
        {query: texts[query] for query in chosen},
        {query: judgements[query] for query in chosen},
        left_out,
        tuple(blank_lines),
    )


def _first_line(path: Path, query: str) -> int:
    """The number of the first line of a qrels file that judges ``query`` (the file has been read once)."""
    lines = qrels_lines(path)
    return next(number for number, line in enumerate(lines, start=1) if line.split("\t")[0].strip() == query)


def left_out_warning(split: str, judged: JudgedQueries) -> str | None:
    """A warning counting the split's queries that judge no document relevant and are not evaluated, or None."""
    if not judged.left_out:
        return None
    shown = ", ".join(repr(query) for query in judged.left_out[:3])
    count = len(judged.left_out)
    return (
        f"{count} {'query' if count == 1 else 'queries'} of {QRELS_FOLDER}/{split}.tsv "
        f"{'judges' if count == 1 else 'judge'} no document above 0 (e.g. {shown}); not evaluated, as a query with "
        "nothing relevant has no ideal ranking"
    )


def query_warnings(split: str, judged: JudgedQueries) -> list[str]:
    """What an evaluation must say about the queries it does not run: ``left_out_warning`` and ``blank_warning``."""
    return [warning for warning in (left_out_warning(split, judged), blank_warning(split, judged)) if warning]


def blank_warning(split: str, judged: JudgedQueries) -> str | None:
    """A warning counting the queries without text that were skipped (none judges a document relevant), or None."""
    if not judged.blank:
        return None
    shown = ", ".join(repr(query) for query in judged.blank[:3])
    count = len(judged.blank)
    return (
        f"{count} {'query' if count == 1 else 'queries'} of {QUERIES_FILE} {'has' if count == 1 else 'have'} no text "
        f"(e.g. {shown}); skipped, as {QRELS_FOLDER}/{split}.tsv judges no document relevant to "
        f"{'it' if count == 1 else 'them'}"
    )


def corpus_warnings(folder: Path, split: str, judged: JudgedQueries) -> list[str]:
    """Warnings naming the documents judged relevant that no configuration can find, so they cap every score:
    those ``corpus.jsonl`` lacks, and those whose record (the first of its ``_id``) has neither title nor text. A
    line that is not a valid record still counts by its id (the ingest's warnings name it)."""
    missing = {doc for docs in judged.qrels.values() for doc, relevance in docs.items() if relevance > 0}
    blank: set[str] = set()
    for item in read_json_lines(folder / CORPUS_FILE, ID_FIELD):
        if not missing:
            break
        if isinstance(item, Problem):
            missing.discard(item.doc_id or "")
            continue
        record = item[1]
        try:
            doc = record_id(record.get(ID_FIELD))
        except ValueError:
            continue
        if doc in missing and _shows_nothing(record.get("title"), record.get("text")):
            blank.add(doc)
        missing.discard(doc)
    warnings = []
    for docs, one, many in (
        (
            missing,
            f"document relevant that is not in {CORPUS_FILE}",
            f"documents relevant that are not in {CORPUS_FILE}",
        ),
        (
            blank,
            "document relevant whose record has neither title nor text",
            "documents relevant whose records have neither title nor text",
        ),
    ):
        if docs:
            shown = ", ".join(repr(doc) for doc in sorted(docs)[:3])
            said, them = (one, "it") if len(docs) == 1 else (many, "them")
            warnings.append(
                f"{QRELS_FOLDER}/{split}.tsv judges {len(docs)} {said} (e.g. {shown}); no configuration can find {them}"
            )
    return warnings


def _shows_nothing(*values: object) -> bool:
    """Whether a record's title and text are both absent or blank (one that is no string fails the ingest, which
    names it)."""
    return all(value is None or (isinstance(value, str) and is_blank(value)) for value in values)
