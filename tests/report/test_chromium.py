"""The report in a real browser: headless Chromium (Debian package `chromium`) renders it with its plots.

Two screenshots of the same page, one with the plots' image data removed, must differ by thousands of pixels in
the plots' own colours: the embedded PNGs decode and draw, offline, with network access disabled.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pipeline.report import build_report
from tests.needs import need_tool
from tests.report.conftest import WORLD

pytestmark = pytest.mark.slow

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
# colours only the plots use in large areas: the bucket bars (always / flipping / never)
PLOT_COLOURS = ((0x2A, 0x9D, 0x5C), (0xF0, 0xAD, 0x4E), (0xC0, 0x39, 0x2B))


def _chromium() -> str:
    return need_tool("chromium", "chromium-browser", "google-chrome", install="Debian: apt-get install -y chromium")


def _run(args: list[str], tmp: Path, name: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{name}"
    profile.mkdir()
    cmd = [_chromium(), *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, timeout=180, check=True)


def _plot_pixels(png: Path) -> tuple[int, int]:
    from PIL import Image

    im = Image.open(png).convert("RGB")
    counts = dict((c, n) for n, c in im.getcolors(maxcolors=1 << 24))
    near = sum(
        n
        for c, n in counts.items()
        if any(sum(abs(a - b) for a, b in zip(c, p, strict=True)) <= 6 for p in PLOT_COLOURS)
    )
    return near, len(counts)


def test_chromium_renders_the_report_with_its_plots(runs, tmp_path):
    report = build_report(
        runs.baseline, runs.candidate, runs.tasks, WORLD, gate_json=runs.gate, out=tmp_path / "report.html"
    )
    n_plots = len(list((tmp_path / "plots").glob("*.png")))
    dom = _run(["--dump-dom", report.as_uri()], tmp_path, "dom").stdout.decode()
    imgs = re.findall(r'<img [^>]*src="data:image/png;base64,[A-Za-z0-9+/=]{1000,}"', dom)
    assert len(imgs) == n_plots == 6
    for section in ("overview", "pass-k", "failure-modes", "cost", "buckets", "gate", "flips"):
        assert f'id="{section}"' in dom

    blank = tmp_path / "blank.html"
    blank.write_text(re.sub(r'src="data:image/png;base64,[^"]+"', 'src="data:image/png;base64,"', report.read_text()))
    shots = {}
    for name, page in (("report", report), ("blank", blank)):
        shot = tmp_path / f"{name}.png"
        _run(["--window-size=1300,9000", f"--screenshot={shot}", page.as_uri()], tmp_path, name)
        shots[name] = _plot_pixels(shot)
    (with_plots, colours), (without, _) = shots["report"], shots["blank"]
    assert report.with_suffix(".html").exists() and (tmp_path / "report.png").stat().st_size > 100_000
    assert colours > 500, "the screenshot is not a rendered page"
    assert with_plots - without > 10_000, (with_plots, without)
