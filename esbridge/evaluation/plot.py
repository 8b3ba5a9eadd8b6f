"""Charts (PNG, SVG, PDF, ...) of evaluation and tuning results (matplotlib, ``pip install 'esbridge[eval]'``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from esbridge.errors import DependencyMissing
from esbridge.evaluation.metrics import METRICS
from esbridge.evaluation.report import ResultRow
from esbridge.ids import shown_path


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise DependencyMissing("matplotlib", "eval", "charts") from exc
    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    return plt


def target_problem(path: Path) -> str | None:
    """Why a chart could not be written to ``path`` (its folder, its extension), or None; checked before a run.

    Raises ``DependencyMissing`` without matplotlib.
    """
    _pyplot()
    from matplotlib.backend_bases import FigureCanvasBase

    if not path.parent.is_dir():
        return f"cannot write chart {shown_path(path)}: folder {shown_path(path.parent)} does not exist"
    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    if path.suffix.lower().removeprefix(".") not in formats:
        extensions = ", ".join("." + f for f in formats)
        return f"cannot write chart {shown_path(path)}: use an image extension, one of {extensions}"
    return None


def metrics_chart(rows: Sequence[ResultRow], path: Path, title: str) -> Path:
    """Grouped horizontal bars: one group per configuration, one bar per metric."""
    shown = [row for row in rows if not row.unavailable]
    columns = [metric for metric in METRICS if any(metric in row.scores for row in shown)]
    return grouped_chart({row.name: row.scores for row in shown}, columns, path, title)


def tuning_chart(curves: Mapping[str, Sequence[tuple[float, float]]], path: Path, title: str) -> Path:
    """nDCG@10 against the BM25 weight share, one line per fusion setting."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(8, 5))
    for label, points in curves.items():
        axes.plot([x for x, _ in points], [y for _, y in points], marker="o", markersize=3, label=label)
    axes.set_xlabel("BM25 weight share  w_bm25 / (w_bm25 + w_knn)")
    axes.set_ylabel("nDCG@10")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def grouped_chart(table: Mapping[str, Mapping[str, float]], columns: Sequence[str], path: Path, title: str) -> Path:
    """Grouped horizontal bars: one group per configuration (``table``'s keys, in order), one bar per
    column (metrics; or collections and their mean) with the value ``table[configuration][column]``; no
    bar where a configuration has no value for the column."""
    plt = _pyplot()
    names = list(table)
    height = 0.8 / max(1, len(columns))
    figure, axes = plt.subplots(figsize=(8, 1.0 + 0.5 * len(names) * max(1, len(columns)) / 2))
    for offset, column in enumerate(columns):
        present = [(index, table[name][column]) for index, name in enumerate(names) if column in table[name]]
        positions = [index + offset * height for index, _ in present]
        values = [value for _, value in present]
        bars = axes.barh(positions, values, height=height, label=column)
        axes.bar_label(bars, fmt="%.3f", fontsize=7, padding=2)
    axes.set_yticks([index + height * (len(columns) - 1) / 2 for index in range(len(names))])
    axes.set_yticklabels(names)
    axes.invert_yaxis()
    axes.set_xlim(0, 1.1)  # room for a value label beside a bar of 1
    axes.set_title(title)
    # Beside the bars, not over them: inside, it hid the longest bars (scores near 1) and their values.
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
