#!/usr/bin/env bash
# Install agentloop and everything its tests need on a fresh machine (CPU only, no model hub).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -e ".[dev]"
