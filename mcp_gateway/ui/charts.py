"""Small inline-SVG charts. Markup is built with ``Markup.format``, which escapes every
argument, and styled by classes only (the Content-Security-Policy forbids inline
styles): a label taken from stored data can never become markup."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from mcp_gateway.ui.insights import Day


def day_bars(days: Sequence[Day], *, width: int = 720, height: int = 170) -> Markup:
    """Searches per day as bars, the part with hits filled darker; one label a week."""
    if not days:
        return Markup("")
    top, bottom, left = 10, 24, 30
    plot_h = height - top - bottom
    peak = max((d.searches for d in days), default=0) or 1
    step = (width - left) / len(days)
    bar_w = max(step * 0.7, 1.0)
    parts = [
        Markup(
            # no width/height: the CSS makes it as wide as its card, the viewBox keeps
            # its proportions
            '<svg class="chart" viewBox="0 0 {w} {h}" role="img" '
            'aria-label="searches per day, hits darker">'
        ).format(w=width, h=height),
        Markup('<text class="axis" x="0" y="{y}">{n}</text>').format(y=top + 8, n=peak),
        Markup('<text class="axis" x="0" y="{y}">0</text>').format(y=top + plot_h),
        Markup('<line class="base" x1="{x}" x2="{x2}" y1="{y}" y2="{y}"/>').format(
            x=left, x2=width, y=top + plot_h
        ),
    ]
    for i, day in enumerate(days):
        x = left + i * step + (step - bar_w) / 2
        total_h = plot_h * day.searches / peak
        hit_h = plot_h * day.hits / peak
        tip = f"{day.day}: {day.searches} searches, {day.hits} with hits"
        parts.append(
            Markup(
                "<g><title>{tip}</title>"
                '<rect class="bar-miss" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}"/>'
                '<rect class="bar-hit" x="{x:.1f}" y="{y2:.1f}" width="{w:.1f}" height="{h2:.1f}"/>'
                "</g>"
            ).format(
                tip=tip,
                x=x,
                y=top + plot_h - total_h,
                w=bar_w,
                h=total_h,
                y2=top + plot_h - hit_h,
                h2=hit_h,
            )
        )
        if (len(days) - 1 - i) % 7 == 0:  # weekly labels, ending on today
            # centred under the bar; today's ends at the right edge (it was cut: "12-0")
            last = i == len(days) - 1
            parts.append(
                Markup(
                    '<text class="axis" x="{x:.1f}" y="{y}" text-anchor="{a}">{label}</text>'
                ).format(
                    x=width - 1 if last else x + bar_w / 2,
                    y=height - 6,
                    a="end" if last else "middle",
                    label=day.day[5:],
                )
            )
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)


def meter(part: int, total: int, *, label: str, width: int = 320) -> Markup:
    """A horizontal bar: ``part`` of ``total``."""
    share = part / total if total else 0.0
    return Markup(
        '<svg class="meter" viewBox="0 0 {w} 18" width="{w}" height="18" role="img" '
        'aria-label="{label}"><title>{label}</title>'
        '<rect class="meter-bg" x="0" y="2" width="{w}" height="14" rx="3"/>'
        '<rect class="meter-fg" x="0" y="2" width="{fw:.1f}" height="14" rx="3"/></svg>'
    ).format(w=width, fw=width * share, label=f"{label}: {part} of {total}")
