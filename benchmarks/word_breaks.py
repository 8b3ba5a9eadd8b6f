"""The embedded engine's words against OpenSearch's: how many texts get the same tokens from both.

    .venv/bin/python benchmarks/word_breaks.py --url http://127.0.0.1:9200 --scifact 1500 --vault 500 --cisi 300

Each text goes to OpenSearch's ``_analyze`` with the built-in ``standard`` and ``english`` analyzers and
through the embedded engine's analyzers of the same names, at every analysis version it knows (1: ``\\w+``
runs; 2: Lucene's word breaks, ``esbridge.engines.embedded.analysis.WORDS``). Prints, per analyzer and
version, the texts whose token lists are identical, OpenSearch's tokens the embedded engine lacks and its
extra ones (as multisets), and the most frequent differences.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

from opensearchpy import OpenSearch

from esbridge.engines.embedded.analysis import BUILTINS

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def records(path: Path, count: int) -> Iterator[str]:
    with path.open(encoding="utf-8") as corpus:
        for line in islice(corpus, count):
            record = json.loads(line)
            yield f"{record.get('title', '')}. {record['text']}"


def texts(scifact: int, vault: int, cisi: int) -> list[str]:
    notes = sorted((SHARED / "vault" / "dendron-site" / "vault").glob("*.md"))[:vault]
    return [
        *records(SHARED / "beir" / "scifact" / "corpus.jsonl", scifact),
        *(note.read_text(encoding="utf-8", errors="replace")[:4000] for note in notes),
        *records(SHARED / "classic" / "cisi" / "corpus.jsonl", cisi),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:9200")
    parser.add_argument("--scifact", type=int, default=1500)
    parser.add_argument("--vault", type=int, default=500)
    parser.add_argument("--cisi", type=int, default=300)
    args = parser.parse_args()
    corpus = texts(args.scifact, args.vault, args.cisi)
    client = OpenSearch(args.url)
    try:
        for analyzer in ("standard", "english"):
            answers = [client.indices.analyze(body={"analyzer": analyzer, "text": text}) for text in corpus]
            expected = [[token["token"] for token in answer["tokens"]] for answer in answers]
            for version, analyzers in sorted(BUILTINS.items()):
                same = missing = extra = 0
                differences: Counter[str] = Counter()
                for text, theirs in zip(corpus, expected, strict=True):
                    ours = analyzers[analyzer].analyze(text)
                    if ours == theirs:
                        same += 1
                        continue
                    lacking, added = Counter(theirs) - Counter(ours), Counter(ours) - Counter(theirs)
                    missing, extra = missing + sum(lacking.values()), extra + sum(added.values())
                    differences.update({f"opensearch:{token}": n for token, n in lacking.items()})
                    differences.update({f"embedded:{token}": n for token, n in added.items()})
                total = sum(map(len, expected))
                print(
                    f"{analyzer} version {version}: identical {same} of {len(corpus)}; OpenSearch's {total} tokens, "
                    f"{missing} missing here ({missing / total:.1%}), {extra} extra"
                )
                print("  most frequent:", ", ".join(f"{item} x{n}" for item, n in differences.most_common(8)))
    finally:
        client.close()


if __name__ == "__main__":
    main()
