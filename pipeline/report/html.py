"""Small HTML building blocks: escaping by default, inline CSS, inline base64 images, tables.

Every piece of text that came from data goes through `esc`; only `Safe` strings built here pass unescaped, so
a tool output or customer message can never inject markup or a link to an external resource.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Sequence


class Safe(str):
    """HTML built by this package: not escaped again."""


def esc(x: object) -> Safe:
    return x if isinstance(x, Safe) else Safe(html.escape(str(x), quote=True))


def join(parts: Iterable[object], sep: str = "") -> Safe:
    return Safe(sep.join(esc(p) for p in parts))


def tag(name: str, body: object = "", cls: str | None = None, **attrs: object) -> Safe:
    attr = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items() if v is not None)
    if cls:
        attr = f' class="{esc(cls)}"' + attr
    return Safe(f"<{name}{attr}>{esc(body)}</{name}>")


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def num(x: float | None, digits: int = 4) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def cell(x: object) -> str:
    """A table cell for a value read from JSON: yes / no for a boolean, — for none, 4 decimals for a float.

    >>> [cell(v) for v in (False, True, None, 0.05, 3, "higher")]
    ['no', 'yes', '—', '0.0500', '3', 'higher']
    """
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return num(x)
    return "—" if x is None else str(x)


def table(headers: Sequence[object], rows: Iterable[Sequence[object]], cls: str = "data") -> Safe:
    head = join(tag("th", h) for h in headers)
    body = join(tag("tr", join(tag("td", c) for c in row)) for row in rows)
    return Safe(f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def img(png: bytes, alt: str, name: str) -> Safe:
    data = base64.b64encode(png).decode("ascii")
    return Safe(
        f'<figure><img class="plot" data-plot="{esc(name)}" alt="{esc(alt)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{esc(alt)}</figcaption></figure>"
    )


def section(id_: str, title: str, *body: object) -> Safe:
    return Safe(f'<section id="{esc(id_)}"><h2>{esc(title)}</h2>{join(body)}</section>')


def note(text: object, cls: str = "note") -> Safe:
    return tag("p", text, cls=cls)


CSS = """
:root { --fg: #1d2430; --muted: #5f6b7a; --line: #d9dee5; --bg: #ffffff; --soft: #f5f7fa;
        --good: #2a9d5c; --bad: #c0392b; --warn: #f0ad4e; --blue: #1f6fd1; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1280px; padding: 0 24px 48px; }
header { border-bottom: 2px solid var(--line); padding: 18px 0 10px; }
h1 { font-size: 22px; margin: 0 0 6px; } h2 { font-size: 18px; margin: 28px 0 10px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
nav a { margin-right: 14px; color: var(--blue); text-decoration: none; }
.meta { color: var(--muted); font-size: 13px; }
.note { color: var(--muted); font-style: italic; }
figure { margin: 8px 0 14px; } figcaption { color: var(--muted); font-size: 12px; }
img.plot { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
table.data { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
table.data th, table.data td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
table.data th { background: var(--soft); }
.badge { display: inline-block; padding: 4px 12px; border-radius: 4px; font-weight: 700; color: #fff; }
.badge.promote { background: var(--good); } .badge.block { background: var(--bad); }
.badge.unknown { background: var(--muted); } .badge.inconclusive { background: #b7791f; }
.flip { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; margin: 16px 0; }
.flip.fixed { border-left: 6px solid var(--good); } .flip.regressed { border-left: 6px solid var(--bad); }
.decisive-box { background: #fff8e6; border: 1px solid var(--warn); border-radius: 4px; padding: 8px 12px; }
table.convo { width: 100%; border-collapse: collapse; table-layout: fixed; font-size: 12.5px; }
table.convo th { background: var(--soft); text-align: left; padding: 4px 6px; }
table.convo td { vertical-align: top; padding: 4px 6px; border-top: 1px solid var(--line); width: 50%; }
table.convo tr.same td { color: var(--muted); }
table.convo tr.differs td { background: #fbfcfe; }
.msg .role { font-weight: 700; font-size: 11px; text-transform: uppercase; color: var(--muted); }
.msg .text { white-space: pre-wrap; word-break: break-word; }
.msg.tool .text { font-family: ui-monospace, Menlo, monospace; font-size: 11.5px; max-height: 9em; overflow: auto; }
.msg.tool.error .text { color: var(--bad); }
code.call { display: block; font-family: ui-monospace, Menlo, monospace; font-size: 11.5px; white-space: pre-wrap;
            word-break: break-word; background: var(--soft); padding: 2px 4px; border-radius: 3px; margin: 2px 0; }
code.call.write { border-left: 3px solid var(--blue); }
.decisive { outline: 3px solid var(--warn); background: #fff3d6 !important; }
.marker { color: #b36b00; font-weight: 700; font-size: 11px; }
.empty { color: var(--muted); }
details summary { cursor: pointer; color: var(--blue); }
pre.raw { background: var(--soft); padding: 8px; overflow: auto; font-size: 12px; }
"""


def page(title: str, header: object, sections: Iterable[object]) -> str:
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body><header>{esc(header)}</header><main>{join(sections)}</main></body></html>\n"
    )
