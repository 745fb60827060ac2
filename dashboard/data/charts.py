"""Small server-side SVG charts for the board (no script, no CDN): bars with a tooltip each."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


def bar_chart(
    series: Sequence[tuple[str, Sequence[float | None], str]],
    labels: Sequence[str],
    *,
    title: str,
    unit: str = "",
    width: int = 640,
    height: int = 150,
) -> SafeString:
    """Grouped bars: ``series`` is (name, values, CSS class) each, one value per label (None: no
    bar). The chart's accessible name is ``title``; each bar's tooltip gives its value."""
    pad_left, pad_bottom, pad_top = 44, 18, 8
    plot_w, plot_h = width - pad_left - 4, height - pad_bottom - pad_top
    peak = max((v for _, values, _ in series for v in values if v is not None), default=0.0)
    peak = peak or 1.0
    slot = plot_w / max(1, len(labels))
    bar = max(1.0, slot * 0.8 / max(1, len(series)))
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<line x1="{pad_left}" y1="{pad_top + plot_h}" x2="{width - 4}" '
        f'y2="{pad_top + plot_h}" class="axis"/>',
        f'<text x="{pad_left - 4}" y="{pad_top + 8}" text-anchor="end" class="tick">'
        f"{_fmt(peak)}{escape(unit)}</text>",
        f'<text x="{pad_left - 4}" y="{pad_top + plot_h}" text-anchor="end" class="tick">0</text>',
    ]
    for i, label in enumerate(labels):
        x0 = pad_left + i * slot + slot * 0.1
        for j, (name, values, css) in enumerate(series):
            value = values[i] if i < len(values) else None
            if value is None:
                continue
            h = plot_h * value / peak
            parts.append(
                f'<rect x="{x0 + j * bar:.1f}" y="{pad_top + plot_h - h:.1f}" width="{bar:.1f}" '
                f'height="{h:.1f}" class="{escape(css)}"><title>{escape(label)} · '
                f"{escape(name)}: {_fmt(value)}{escape(unit)}</title></rect>"
            )
        if len(labels) <= 12 or i % max(1, len(labels) // 6) == 0:
            parts.append(f'<text x="{x0:.1f}" y="{height - 4}" class="tick">{escape(label)}</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every interpolated text is escaped above


def _fmt(value: float) -> str:
    if float(value).is_integer() or value >= 10:
        return f"{value:.0f}"
    return f"{value:.1f}"
