"""Two iterations logged by `promote`, compared in the MLflow UI as docs/mlflow.md says: headless Chromium opens the
server, switches to *Model training*, opens the experiment, ticks both iteration runs and clicks **Compare**; the
compare view lines up each iteration's pass^k (the candidate's and the champion's) under the same keys, and the
run page shows the headline as the run's description."""

from __future__ import annotations

import contextlib
import re
import shutil
from urllib.parse import unquote

import pytest
import yaml

from pipeline.loop.entry import run_stage
from pipeline.loop.track import track_and_promote
from pipeline.tracking import TrackingConfig
from pipeline.tracking.headline import headline_of
from tests.loop.loop_helpers import REDUCED, ROOT
from tests.loop.test_track import STEPS
from tests.needs import need_module, need_tool
from tests.tracking.server import serve_mlflow

pytestmark = pytest.mark.slow


def _params(iteration: int, source: str) -> dict:
    params = {k: dict(v) for k, v in REDUCED.items() if k != "embedded"}
    params["synthesize"] = {"anchors": 6}
    params["curate"]["max_items"] = 10
    params["loop"] = {"iteration": iteration}
    params["baseline"] = {"source": source}
    params["promote"] = {"traces": False}
    return params


@pytest.fixture(scope="module")
def two_iterations(tmp_path_factory):
    """Iteration 1 from a flawed agent; iteration 2 from the champion iteration 1 promoted; both by `promote`."""
    work = tmp_path_factory.mktemp("two-iterations")
    shutil.copytree(ROOT / "stages", work / "stages")
    db = work / "mlruns.db"
    mp = pytest.MonkeyPatch()
    mp.chdir(work)
    mp.setenv("AGENTLOOP_PARAMS", str(work / "params.yaml"))
    mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    results = []
    try:
        for iteration, source in ((1, REDUCED["baseline"]["source"]), (2, "champion")):
            (work / "params.yaml").write_text(yaml.safe_dump(_params(iteration, source)))
            for name, step in STEPS:
                run_stage(name, step)
            results.append(run_stage("promote", track_and_promote))
            assert iteration > 1 or results[0]["champion_moved"], "iteration 1 must promote for 2 to start from it"
        yield work, db, results
    finally:
        mp.undo()


def _values_in_row(page, key: str) -> list[float]:
    """The numbers of one metric row of the compare view, left to right (its grid positions cells absolutely)."""
    name = page.get_by_title("Plot chart").filter(has_text=re.compile(rf"^{re.escape(key)}$"))
    box = name.bounding_box()
    assert box is not None, f"{key} is not in the compare view"
    cells = []
    for span in page.locator("span[tooltip-data-state]").all():
        b = span.bounding_box()
        if b and abs((b["y"] + b["height"] / 2) - (box["y"] + box["height"] / 2)) < 4 and b["x"] > box["x"]:
            with contextlib.suppress(ValueError):
                cells.append((b["x"], float(span.inner_text())))
    return [v for _, v in sorted(cells)]


def test_the_compare_view_lines_up_both_iterations(two_iterations, tmp_path):
    work, db, results = two_iterations
    chromium = need_tool("chromium", "chromium-browser", install="apt-get install chromium")
    sync_api = need_module("playwright.sync_api", install="pip install playwright")
    client = TrackingConfig(tracking_uri=f"sqlite:///{db}").client()
    runs = [client.get_run(r["run_id"]) for r in results]
    names = [r.info.run_name for r in runs]
    assert names[0].startswith("iter-001 · flawed · promoted v1") and names[1].startswith("iter-002 · v1 · ")
    k = headline_of(runs[1]).k
    with serve_mlflow(tmp_path / "server", db) as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1200})
            page.set_default_timeout(60_000)
            page.goto(url)
            page.get_by_role("button", name="Model training").click()  # the experiment list, then the runs table
            page.get_by_role("link", name="agentloop").first.click()
            page.get_by_text("matching runs").wait_for()
            for name in names:
                row = page.locator(".ag-row", has_text=name).first
                index = row.get_attribute("row-index")
                page.locator(f".ag-row[row-index='{index}'] input.ag-checkbox-input").first.check()
            page.get_by_role("button", name="Compare").click()
            page.get_by_text("Comparing 2 Runs").wait_for()
            page.get_by_title("Plot chart").first.wait_for()
            page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
            body = page.locator("body").inner_text()
            assert all(name in body for name in names)
            shown = {key: _values_in_row(page, key) for key in (f"candidate/pass_hat_{k}", f"champion/pass_hat_{k}")}
            ids = re.findall(r'"([0-9a-f]{32})"', unquote(page.url))  # the view's columns, in the URL's run order
            assert sorted(ids) == sorted(r.info.run_id for r in runs)
            for key, values in shown.items():
                want = [client.get_run(i).data.metrics[key] for i in ids]
                assert values == pytest.approx(want, abs=1e-3), key

            page.goto(f"{url}/#/experiments/{runs[1].info.experiment_id}/runs/{runs[1].info.run_id}")
            page.get_by_text(f"pass^{k} ", exact=False).first.wait_for()
            assert re.search(rf"pass\^{k} \d+\.\d% → \d+\.\d% \([+-]\d+\.\d pp", page.locator("body").inner_text())
        finally:
            browser.close()
    assert (work / "report" / "plots" / "iterations.png").exists()
    assert "iterations.png" in {f.path for f in client.list_artifacts(runs[1].info.run_id)}
