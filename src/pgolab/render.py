"""Renderers of the report model: terminal, Markdown, HTML, CSV, JSON; export of them all.

Markdown and HTML are one markup renderer that each specialise by its primitives
(heading, paragraph, table); the document's order is written once. Tables are never
wrapped when output goes to a pipe or a file, so identifiers stay whole for grep.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from pathlib import Path

from rich.console import Console
from rich.table import Table as RichTable

from . import stats
from .report import Report, Table


VERDICTS = ("faster", "slower", "cheaper", "costlier", "same", "inconclusive")


def cell_text(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, stats.Estimate):
        return value.fmt()
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return f"{value:.3f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def cell_json(value):
    if isinstance(value, stats.Estimate):
        cell = {"value": value.value, "low": value.low, "high": value.high, "verdict": value.verdict(),
                "pairs": value.n, "df": value.df}
        if value.bound is not None:     # a bound estimate: no degrees of freedom, the bound instead
            cell["bound"] = value.bound
        return cell
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def table_cells(t: Table) -> tuple[list[str], list[list[str]]]:
    """A table's header and its rows as text, in column order: what every grid renders."""
    return [c.title for c in t.columns], [[cell_text(r.get(c.key)) for c in t.columns] for r in t.rows]


class MarkupRenderer:
    """The document's order; subclasses supply the primitives."""

    def render(self, report: Report, images: dict[str, Path] | None = None) -> str:
        out = [self.heading(1, report.title)]
        out += [self.paragraph(f) for f in report.facts]
        tables = {t.key: t for t in report.tables}
        first = [key for key in ("builds", "groups") if key in tables]   # a run's report leads with them
        for key in first:
            out.append(self.table(tables[key]))
        if images:
            out.append(self.heading(2, "Charts"))
            out.append(self.images(images))
        for t in report.tables:
            if t.key not in first:
                out.append(self.table(t))
        for title, text in report.notes:
            out += [self.heading(2, title), self.paragraph(text)]
        out += [self.heading(2, "Commands"), self.code("\n".join(report.commands))]
        return self.document(report.title, "\n".join(out))

    def table(self, t: Table) -> str:
        parts = [self.heading(2, t.title)]
        if t.rows:
            parts.append(self.grid(*table_cells(t)))
        if t.note:
            parts.append(self.paragraph(t.note))
        return "\n".join(parts)

    # primitives
    def heading(self, level: int, text: str) -> str: raise NotImplementedError
    def paragraph(self, text: str) -> str: raise NotImplementedError
    def grid(self, header: list[str], rows: list[list[str]]) -> str: raise NotImplementedError
    def code(self, text: str) -> str: raise NotImplementedError
    def images(self, images: dict[str, Path]) -> str: return ""
    def document(self, title: str, body: str) -> str: return body


class MarkdownRenderer(MarkupRenderer):
    def heading(self, level, text):
        return f"{'#' * level} {text}\n"

    def paragraph(self, text):
        return f"{text}\n"

    def grid(self, header, rows):
        esc = lambda s: s.replace("|", "\\|")  # noqa: E731
        lines = ["| " + " | ".join(map(esc, header)) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(map(esc, r)) + " |" for r in rows]
        return "\n".join(lines) + "\n"

    def code(self, text):
        return "\n".join("    " + line for line in text.splitlines()) + "\n"

    def images(self, images):
        return "\n".join(f"![{name}]({path.name})" for name, path in images.items()) + "\n"


class HtmlRenderer(MarkupRenderer):
    STYLE = ("body{font-family:sans-serif;max-width:1300px;margin:auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:.5em 0;font-size:13px}td,th{border:1px solid #ccc;"
             "padding:2px 5px}td{white-space:nowrap}th{background:#f3f3f3;position:sticky;top:0}"
             ".faster,.cheaper{color:#060;font-weight:bold}.slower,.costlier{color:#a00;font-weight:bold}"
             ".inconclusive{color:#777}.fragile{color:#a60}"
             ".charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(600px,1fr));gap:8px}"
             ".charts img{width:100%}pre{white-space:pre-wrap}")

    def heading(self, level, text):
        return f"<h{level}>{html.escape(text)}</h{level}>"

    def paragraph(self, text):
        return f"<p>{html.escape(text)}</p>"

    def grid(self, header, rows):
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(self.cell(c) for c in r) + "</tr>" for r in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def cell(self, text):
        kind = text if text in VERDICTS else "fragile" if "fragile: " in text else ""
        attribute = f' class="{kind}"' if kind else ""
        return f"<td{attribute}>{html.escape(text)}</td>"

    def code(self, text):
        return f"<pre>{html.escape(text)}</pre>"

    def images(self, images):
        tags = "".join(f'<img alt="{html.escape(name)}" src="data:image/png;base64,'
                       f'{base64.b64encode(path.read_bytes()).decode()}">' for name, path in images.items())
        return f'<div class="charts">{tags}</div>'

    def document(self, title, body):
        return (f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
                f"<style>{self.STYLE}</style></head><body>\n{body}\n</body></html>\n")


def to_csv(table: Table) -> str:
    """One table; an interval becomes value, low, high and verdict columns, side by side in the
    table's column order, whichever row first holds one (a row without it leaves them empty)."""
    buf = io.StringIO()
    intervals = {c.key for c in table.columns if any(isinstance(r.get(c.key), stats.Estimate) for r in table.rows)}
    fields = [k for c in table.columns
              for k in ((c.key, f"{c.key}_low", f"{c.key}_high") if c.key in intervals else (c.key,))]
    rows = []
    for r in table.rows:
        flat = {}
        for c in table.columns:
            v = r.get(c.key)
            if isinstance(v, stats.Estimate):
                flat |= {c.key: v.value, f"{c.key}_low": v.low, f"{c.key}_high": v.high}
            else:
                flat[c.key] = v
        rows.append(flat)
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def to_json(report: Report) -> str:
    return json.dumps({
        "title": report.title, "facts": report.facts,
        "tables": {t.key: {"title": t.title, "note": t.note,
                           "columns": [{"key": c.key, "title": c.title} for c in t.columns],
                           "rows": [{k: cell_json(v) for k, v in r.items()} for r in t.rows]}
                   for t in report.tables},
        "notes": {title: text for title, text in report.notes},
        "commands": report.commands,
    }, indent=2)


def console_for_output(stream=None) -> Console:
    """A console that never wraps tables when not writing to a terminal."""
    probe = Console(file=stream)
    return probe if probe.is_terminal else Console(file=stream, width=100_000, soft_wrap=True)


def rich_table(title: str, header: list[str], rows: list[list[str]], no_wrap: bool = True) -> RichTable:
    table = RichTable(title=title)
    for h in header:
        table.add_column(h, no_wrap=no_wrap, overflow="ellipsis" if no_wrap else "fold")
    for r in rows:
        table.add_row(*r)
    return table


def print_table(t: Table, console: Console, no_wrap: bool = True) -> None:
    console.print(rich_table(t.title, *table_cells(t), no_wrap=no_wrap))
    if t.note:
        console.print(t.note, highlight=False, markup=False)


def print_terminal(report: Report, console: Console) -> None:
    console.print(report.title, style="bold", highlight=False)
    for f in report.facts:
        console.print(f, highlight=False, markup=False)
    for t in report.tables:
        if t.rows:
            print_table(t, console, no_wrap=not console.is_terminal or t.key != "targets")
    for title, text in report.notes:
        console.print(f"{title}: {text}", highlight=False, markup=False)


def export(report: Report, out_dir: Path) -> dict[str, Path]:
    """Every format into one folder: report.md, report.html, report.json, one CSV per table, PNGs."""
    from .charts import draw
    out_dir.mkdir(parents=True, exist_ok=True)
    images = draw(report.charts, out_dir)
    files = {"markdown": out_dir / "report.md", "html": out_dir / "report.html", "json": out_dir / "report.json"}
    files["markdown"].write_text(MarkdownRenderer().render(report, images))
    files["html"].write_text(HtmlRenderer().render(report, images))
    files["json"].write_text(to_json(report))
    for t in report.tables:
        files[f"csv-{t.key}"] = out_dir / f"{t.key}.csv"
        files[f"csv-{t.key}"].write_text(to_csv(t))
    files |= {f"png-{k}": p for k, p in images.items()}
    return files
