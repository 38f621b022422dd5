"""DVC stage `eval_tasks`: the frozen held-out tasks from the evaluation world."""

from pipeline.loop.entry import run_stage
from pipeline.loop.stages import make_eval_tasks

if __name__ == "__main__":
    run_stage("eval_tasks", make_eval_tasks)
