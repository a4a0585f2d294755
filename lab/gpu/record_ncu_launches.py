"""Launch a small Triton kernel N times between cudaProfilerStart/Stop: under
`ncu --profile-from-start off ...` that records an N-launch report for the ncu reading benchmark
(scripts/bench_scale.py --ncu-report)."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import kernels  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
kernels.vector_add(x, y)
torch.cuda.synchronize()
torch.cuda.profiler.start()
for _ in range(n):
    kernels.vector_add(x, y)
torch.cuda.synchronize()
torch.cuda.profiler.stop()
