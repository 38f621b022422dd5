#!/usr/bin/env bash
# The bring-your-own-model path on one CUDA GPU, in under 10 minutes, one result line per step:
#   1 a random-weight Qwen2-architecture checkpoint with Qwen2.5's chat template (bench/gpu_fixture.py)
#   2 tasks of a small generated world, and the oracle's gold trajectories (SFT data)
#   3 `vllm serve` of the checkpoint, measured through the openai backend
#   4 the same checkpoint measured through the vllm backend (offline engine, episodes batched)
#   5 SFT with LoRA in bf16
#   6 two GRPO steps with vLLM colocated (TRL's importance-sampling correction on our rollout logprobs)
# A random model fails every task: the lines report that each step runs and how long it takes, not quality.
#
#   bash bench/gpu_check.sh [WORKDIR]        (needs the gpu extra: pip install -e ".[gpu]")
# Environment: GPU_CHECK_PORT (8011), GPU_CHECK_TASKS (4), GPU_CHECK_WORLD (gen-5-8x30x60).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="${1:-$(mktemp -d -t agentloop-gpu-check-XXXXXX)}"
PORT="${GPU_CHECK_PORT:-8011}"
NTASKS="${GPU_CHECK_TASKS:-4}"
WORLD="${GPU_CHECK_WORLD:-gen-5-8x30x60}"
MODEL_NAME="tiny-qwen2"
mkdir -p "$WORK"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TRL_EXPERIMENTAL_SILENCE=1
export HF_HUB_OFFLINE=1 DVC_NO_ANALYTICS=1 MLFLOW_DISABLE_TELEMETRY=true
AGENTLOOP=(python -m pipeline.cli)
SERVER_PID=""

cleanup() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT

CHECK=gpu_check
# shellcheck source=bench/gpu_check_steps.sh
source "$ROOT/bench/gpu_check_steps.sh"

metrics() {  # one-line summary of a measure run's metrics.json
    python - "$1" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"valid_trials={m['valid_trials']} infra_errors={m['infra_errors']} pass_at_1={m['pass_at_1']}")
EOF
}

# ---- 0 the machine -----------------------------------------------------------------------------------------
step_start
python - >"$WORK/env.log" 2>&1 <<'EOF' || fail env "$WORK/env.log"
import torch, trl, vllm
assert torch.cuda.is_available(), "no CUDA GPU"
print(f"torch={torch.__version__} trl={trl.__version__} vllm={vllm.__version__} gpu={torch.cuda.get_device_name(0)}")
EOF
command -v vllm >>"$WORK/env.log" 2>&1 || fail env "$WORK/env.log"  # the `vllm serve` entry point
result env ok "$(head -n 1 "$WORK/env.log")"

# ---- 1 the checkpoint --------------------------------------------------------------------------------------
step_start
CKPT="$WORK/qwen2"
run_logged fixture "$WORK/fixture.log" python bench/gpu_fixture.py --out "$CKPT"
result fixture ok "$(grep '^{' "$WORK/fixture.log" | tail -n 1)"

# ---- 2 tasks and gold trajectories -------------------------------------------------------------------------
step_start
TASKS="$WORK/tasks.jsonl"
run_logged tasks "$WORK/tasks.log" "${AGENTLOOP[@]}" tasks generate --world "$WORLD" --n "$NTASKS" --out "$TASKS"
run_logged tasks "$WORK/gold.log" "${AGENTLOOP[@]}" measure --world "$WORLD" --tasks "$TASKS" --agent oracle \
    --trials 1 --out "$WORK/gold"
result tasks ok "$NTASKS tasks of $WORLD; oracle $(metrics "$WORK/gold/metrics.json")"

# ---- 3 vllm serve + the openai backend ---------------------------------------------------------------------
step_start
vllm serve "$CKPT" --served-model-name "$MODEL_NAME" --port "$PORT" --seed 0 --gpu-memory-utilization 0.25 \
    --enforce-eager --enable-auto-tool-choice --tool-call-parser hermes >"$WORK/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 180); do
    if python -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" \
        "http://127.0.0.1:$PORT/health" 2>/dev/null; then
        break
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || fail serve "$WORK/serve.log"
    sleep 1
done
python -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" \
    "http://127.0.0.1:$PORT/health" 2>/dev/null || fail serve "$WORK/serve.log"
result serve ok "vllm serve up on port $PORT"
step_start
export AGENTLOOP_BASE_URL="http://127.0.0.1:$PORT/v1"
run_logged openai "$WORK/openai.log" "${AGENTLOOP[@]}" measure \
    --world "$WORLD" --tasks "$TASKS" --agent "openai:$MODEL_NAME,max_tokens=32" --trials 1 --concurrency 8 \
    --out "$WORK/m_openai"
unset AGENTLOOP_BASE_URL
result openai ok "$(metrics "$WORK/m_openai/metrics.json")"
cleanup
SERVER_PID=""

# ---- 4 the vllm backend ------------------------------------------------------------------------------------
step_start
run_logged vllm-backend "$WORK/vllm.log" "${AGENTLOOP[@]}" measure --world "$WORLD" --tasks "$TASKS" \
    --agent "vllm:$CKPT,max_tokens=32,gpu_memory_utilization=0.25" --trials 2 --concurrency 8 --out "$WORK/m_vllm"
result vllm-backend ok "$(metrics "$WORK/m_vllm/metrics.json")"

# ---- 5 SFT, LoRA, bf16 -------------------------------------------------------------------------------------
step_start
run_logged sft-lora-bf16 "$WORK/sft.log" "${AGENTLOOP[@]}" train sft --base "$CKPT" \
    --data "$WORK/gold/trajectories.jsonl" --tasks "$TASKS" --lora --lora-rank 8 --lora-alpha 16 --bf16 \
    --epochs 1 --batch-size 2 --max-length 8192 --lr 1e-4 --out "$WORK/sft"
result sft-lora-bf16 ok "$(python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['architecture'], \
m['dtype'], m['chat_format'])" "$WORK/sft/agentloop.json")"

# ---- 6 GRPO, vLLM colocated ---------------------------------------------------------------------------------
# (--max-resamples 0: a random model's groups never vary, so replacing them would only cost episodes)
step_start
run_logged grpo-vllm "$WORK/grpo.log" "${AGENTLOOP[@]}" train grpo --base "$WORK/sft" --tasks "$TASKS" --steps 2 \
    --num-generations 2 --tasks-per-step 2 --max-new-tokens 32 --max-resamples 0 --lr 1e-6 --bf16 \
    --vllm colocate --vllm-gpu-memory 0.3 --out "$WORK/grpo"
IS_RATIO="$(python - "$WORK/grpo.log" <<'EOF'
import ast, sys
key = "sampling/importance_sampling_ratio/mean"
logs = [ast.literal_eval(line) for line in open(sys.argv[1]) if line.startswith("{") and key in line]
print(",".join(f"{float(e[key]):.4f}" for e in logs))
EOF
)"
result grpo-vllm ok "importance_sampling_ratio/mean per step [${IS_RATIO:-not logged}];" \
    "$(grep -o 'GRPO: [0-9]* steps[^;]*' "$WORK/grpo.log" | tail -n 1)"

echo "gpu_check done in $((SECONDS - T0))s; logs and outputs in $WORK"
