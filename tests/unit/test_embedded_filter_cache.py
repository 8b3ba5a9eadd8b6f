"""The filters' cache a data directory keeps for all of a process's searches: filtered searches fill it while an
index's deletion (or another search's catch-up after one) empties it of that index's entries."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from esbridge.engines.embedded.datadir import DataDir


def test_a_search_filling_the_filters_cache_while_an_index_is_dropped_from_it_raises_nothing(tmp_path: Path) -> None:
    """Dropping an index's entries iterated the cache while a search added to it: a raw 'RuntimeError: OrderedDict
    mutated during iteration' from the deletion (or from the search that caught up with it)."""
    shared = DataDir(tmp_path, None)
    added, failures = threading.Event(), []

    def search() -> None:
        try:
            shared.restriction((2, "new"), lambda: "allowed rows")
        except Exception as exc:  # (what escapes is the finding)
            failures.append(exc)
        added.set()

    searching = threading.Thread(target=search)

    class SearchedMeanwhile(OrderedDict[tuple[Any, ...], Any]):
        def __iter__(self) -> Iterator[tuple[Any, ...]]:
            for number, key in enumerate(super().__iter__()):
                if number == 1 and not searching.is_alive():  # a search adds its entry in the middle of the drop
                    searching.start()
                    added.wait(0.5)  # (no longer than that: with the cache locked, it waits for the drop)
                yield key

    shared._filters = SearchedMeanwhile()
    for number in range(4):
        shared.restriction((1, number), lambda: "rows")
    try:
        shared._drop(1)
    except Exception as exc:  # (what escapes is the finding)
        failures.append(exc)
    searching.join(10)
    shared._workers.shutdown()

    assert failures == []
    assert list(shared._filters) == [(2, "new")]
