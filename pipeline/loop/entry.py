"""What every stage script does: configure logging, load params.yaml (validated, then resolved: every name in it
names something usable), run one stage function. An error raised on purpose (`pipeline.errors.AgentloopError`:
a domain's kit that does not fit its tools, an evaluation customer in a training input) ends the stage with its
one-line message and exit code 2, as the command line does; anything else is a bug and keeps its traceback."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from pipeline.errors import AgentloopError
from pipeline.loop.params import Params, ParamsError, load_params
from pipeline.loop.resolve import resolve_params
from pipeline.loop.stage_times import StageTime, write_stage_time


def run_stage(name: str, fn: Callable[[Params], Any]) -> Any:
    logging.basicConfig(level=os.environ.get("AGENTLOOP_LOG", "INFO"), format="%(asctime)s %(name)s: %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        source = os.environ.get("AGENTLOOP_PARAMS", "params.yaml")
        params = load_params(source)
        resolve_params(params, source)
    except ParamsError as exc:
        print(f"stage {name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    from pipeline.tracking import TrackingUnavailableError

    start, status = time.time(), "FAILED"
    try:
        result = fn(params)
        status = "FINISHED"
    except TrackingUnavailableError as exc:
        print(f"stage {name}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    except AgentloopError as exc:  # raised on purpose, its message meant for the user: one line, no traceback
        print(f"stage {name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        end = time.time()
        write_stage_time(StageTime(stage=name, start=start, end=end, status=status))
    logging.getLogger("agentloop.stage").info("stage %s done in %.1f s", name, end - start)
    return result
