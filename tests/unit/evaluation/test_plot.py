"""The charts of eval and tune: every bar's value label stays readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from esbridge.evaluation import plot


def test_the_legend_covers_no_bar_and_no_value_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plt = plot._pyplot()
    drawn: list[Any] = []
    monkeypatch.setattr(plt, "close", drawn.append)  # keep the figure to measure it
    # Scores of 1.0 put the longest bars and their labels in the corner where the legend used to sit.
    table = {name: {"ndcg@10": 0.97, "recall@100": 1.0, "mrr@10": 1.0} for name in ("bm25", "knn", "default")}
    plot.grouped_chart(table, ["ndcg@10", "recall@100", "mrr@10"], tmp_path / "chart.png", "title")
    (figure,) = drawn
    renderer = figure.canvas.get_renderer()
    axes = figure.axes[0]
    legend = axes.get_legend().get_window_extent(renderer)
    labels = [text for text in axes.texts if text.get_text()]
    assert len(labels) == 9
    for artist in [*axes.patches, *labels]:
        assert not legend.overlaps(artist.get_window_extent(renderer)), artist
    plot_box = axes.get_window_extent(renderer)
    for text in labels:  # inside the plot, not across its frame
        box = text.get_window_extent(renderer)
        assert plot_box.x0 <= box.x0 and box.x1 <= plot_box.x1, text.get_text()
    plt.close(figure)
