"""A small stacked bar chart as inline SVG, rendered on the server (no script, no CDN).

Colours are SVG presentation attributes, not `style`, so the page's Content-Security-Policy
needs no 'unsafe-inline'. Every string from the database is escaped.
"""

from __future__ import annotations

from html import escape

PALETTE = ["#2f6fdf", "#e07b24", "#2a9d5b", "#b54bb8", "#c4373b", "#7a7a7a"]
KNOWN = {"web": PALETTE[0], "desktop-cli": PALETTE[1], "cursor": PALETTE[2]}


def colour_for(surface: str, index: int) -> str:
    return KNOWN.get(surface) or PALETTE[3 + index % (len(PALETTE) - 3)]


def stacked_bars(days: list[str], series: dict[str, list[int]], *, width: int = 640,
                 height: int = 170) -> str:
    left, bottom, top = 34, 22, 8
    plot_w, plot_h = width - left - 6, height - bottom - top
    totals = [sum(values[i] for values in series.values()) for i in range(len(days))]
    peak = max(totals, default=0) or 1
    slot = plot_w / max(len(days), 1)
    bar_w = max(slot * 0.75, 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-label="writes per surface per day over the last {len(days)} days">',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 6}" y2="{top + plot_h}" '
        f'stroke="#999" stroke-width="1"/>',
        f'<text x="{left - 4}" y="{top + 8}" font-size="10" text-anchor="end" fill="#555">'
        f'{peak}</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" font-size="10" text-anchor="end" fill="#555">'
        f'0</text>',
    ]
    surfaces = sorted(series)
    for i, day in enumerate(days):
        y = float(top + plot_h)
        x = left + i * slot + (slot - bar_w) / 2
        for n, surface in enumerate(surfaces):
            value = series[surface][i]
            if not value:
                continue
            h = plot_h * value / peak
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                f'fill="{colour_for(surface, n)}"><title>{escape(day)} {escape(surface)}: '
                f'{value}</title></rect>'
            )
    if days:
        parts.append(
            f'<text x="{left}" y="{height - 6}" font-size="10" fill="#555">{escape(days[0])}</text>'
        )
        parts.append(
            f'<text x="{width - 6}" y="{height - 6}" font-size="10" text-anchor="end" '
            f'fill="#555">{escape(days[-1])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def legend(series: dict[str, list[int]]) -> list[tuple[str, str, int]]:
    """(surface, colour, total) for each surface in the chart."""
    return [(s, colour_for(s, n), sum(series[s])) for n, s in enumerate(sorted(series))]
