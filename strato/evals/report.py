"""A comparison for people: a table on the terminal, a Markdown report, and its plot as
an SVG written here by hand (success rate and tokens per task of each configuration), so
no plotting library is needed."""

from __future__ import annotations

from html import escape
from typing import Any

from tropo import untrusted

# what each configuration is shown by: (name, summary key, format)
METRICS = (
    ("success rate", "successRate", "{:.1%}"),
    ("tokens / task", "tokensPerTask", "{:.0f}"),
    ("wall ms / task", "wallMsPerTask", "{:.0f}"),
    ("attempts / task", "attemptsPerTask", "{:.2f}"),
    ("verifier calls / task", "verifierCallsPerTask", "{:.2f}"),
)


def label(side: dict[str, Any]) -> str:
    return f"{side['id']} ({side['flow']}, {side['agent']}, lanes {'on' if side['lanes'] else 'off'})"


def table(doc: dict[str, Any]) -> list[str]:
    """The comparison as terminal lines."""
    a, b, d = doc["a"], doc["b"], doc["difference"]
    lines = [f"A: {label(a)}", f"B: {label(b)}", "",
             f"{'':<22}{'A':>12}{'B':>12}"]
    for name, key, fmt in METRICS:
        lines.append(f"{name:<22}{fmt.format(a[key]):>12}{fmt.format(b[key]):>12}")
    lines.append("")
    lines.append(f"B - A success rate: {d['successRate']:+.1%} "
                 f"({d['level']:.0%} CI {d['ci'][0]:+.1%} .. {d['ci'][1]:+.1%}, "
                 f"{doc['pairedTasks']} paired tasks, {d['resamples']} bootstrap resamples)")
    flips = doc["flipped"]
    named = ", ".join(f"{f['task']} -> {f['to']}" for f in flips)
    lines.append(f"flipped: {len(flips)}" + (f": {named}" if flips else ""))
    for side, name in ((a, "A"), (b, "B")):
        if not side["complete"]:
            lines.append(f"note: {name} has {side['results']} of {side['expected']} results (unfinished)")
    return lines


def svg(bars: list[tuple[str, float, float]]) -> str:
    """Two panels of bars, one bar per configuration, its name above it: (name, success
    rate 0..1, tokens per task)."""
    width, row, left = 640, 40, 10
    height = 40 + 2 * (len(bars) * row + 40)
    top_tokens = max((t for _, _, t in bars), default=0.0) or 1.0
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    y = 20
    for title, column, scale, fmt, colour in (
        ("success rate", 1, 1.0, "{:.0%}", "#3b7dd8"),
        ("tokens per task", 2, top_tokens, "{:.0f}", "#d8893b"),
    ):
        out.append(f'<text x="{left}" y="{y + 12}" font-weight="bold">{title}</text>')
        y += 22
        for bar in bars:
            value = float(bar[column])
            w = 0 if scale <= 0 else (width - left - 70) * value / scale
            out.append(f'<text x="{left}" y="{y + 12}">{escape(bar[0])}</text>')
            out.append(f'<rect x="{left}" y="{y + 17}" width="{w:.1f}" height="16" fill="{colour}"/>')
            out.append(f'<text x="{left + w + 6:.1f}" y="{y + 30}">{fmt.format(value)}</text>')
            y += row
        y += 18
    out.append("</svg>")
    return "\n".join(out) + "\n"


def markdown(doc: dict[str, Any], plot_name: str) -> str:
    """The Markdown report; the plot is the SVG file ``plot_name`` beside it."""
    a, b, d = doc["a"], doc["b"], doc["difference"]
    rows = ["| | A | B |", "|---|---:|---:|"]
    for name, key, fmt in METRICS:
        rows.append(f"| {name} | {fmt.format(a[key])} | {fmt.format(b[key])} |")
    flips = ["| task | A | B |", "|---|---:|---:|"] + [
        f"| {untrusted.markdown(f['task'])} | {f['a']:.2f} | {f['b']:.2f} |" for f in doc["flipped"]]
    return "\n".join([
        f"# Eval comparison: {untrusted.markdown(a['id'])} vs {untrusted.markdown(b['id'])}", "",
        f"- A: {untrusted.code_span(label(a))}", f"- B: {untrusted.code_span(label(b))}", "",
        *rows, "",
        f"B - A success rate: **{d['successRate']:+.1%}** ({d['level']:.0%} bootstrap CI "
        f"{d['ci'][0]:+.1%} .. {d['ci'][1]:+.1%} over {doc['pairedTasks']} paired tasks, "
        f"{d['resamples']} resamples, seed {d['seed']}).", "",
        f"![success rate and tokens per task]({plot_name})", "",
        f"## Flipped tasks ({len(doc['flipped'])})", "",
        *(flips if doc["flipped"] else ["none"]), "",
    ])
