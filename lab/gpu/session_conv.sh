#!/usr/bin/env bash
# Session conv (H100, issue 30 req 4): a cuDNN channels_last bf16 conv2d of ~57 us flipped between 57 and
# 100-118 us in streaks on both sides of a shared A/B host while separate processes held +-0.1%.
#   1. probe: the conv in alternating rounds under variants that each take one suspect away (threads vs one
#      thread, a MemPool per side, inputs kept in place, cudnn.benchmark, a process per side), ~2 min;
#   2. ab: two A/A runs of that conv through `perfgate ab --process shared` (does the host now end sharing,
#      and name why, or hold the ratio?), ~2 min.
# From the project root:  source .device-env/setup.sh && bash lab/gpu/session_conv.sh
set -u
. lab/gpu/phases.sh
nvidia-smi --query-gpu=name,driver_version,utilization.gpu,memory.used --format=csv,noheader | tee "$R/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())" | tee "$R/versions.txt"
# One process per variant: torch 2.11's MemPool destructor aborts the process (captures_underway assert,
# seen on an H200), which must not take the other variants with it. `pools` goes last.
for v in threads one-thread keep-place benchmark separate threads one-thread pools; do
  phase "probe-$v" 120 python3 lab/gpu/shared_conv_probe.py --rounds "${CONV_ROUNDS:-300}" --variants "$v"
  grep "conv-probe:" "$R/probe-$v.log"
done

P=${TMPDIR:-/tmp}/perfgate-conv-ab
rm -rf "$P" && mkdir -p "$P" && cd "$P" || exit 1
git init -q -b main && git config user.email lab@example.com && git config user.name lab
cat > pyproject.toml <<'TOML'
[tool.perfgate]
ab_process = "shared"
TOML
cat > test_conv.py <<'PY'
import torch


def test_conv_channels_last_bf16(perfgate):
    x = torch.randn(16, 256, 28, 28, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    w = torch.randn(256, 256, 3, 3, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    perfgate(torch.nn.functional.conv2d, x, w, padding=1)
PY
git add -A && git commit -qm base && echo "# the head: the same code" >> test_conv.py && git commit -qam head
cd - >/dev/null || exit 1
ROOT=$PWD
for i in 1 2; do
  (cd "$P" && phase "ab$i" 240 env PYTHONPATH="$ROOT" python3 -m perfgate ab HEAD~1 --rounds 30 --no-store --measure-same-code \
    --worktree-dir "$P.wt" --json "$R/ab$i.json" -- test_conv.py)
  grep -E "shared comparison ended|test_conv|A/B gate|one process|process per tree" "$R/ab$i.log"
done
tail -5 "$R/steps.log"
