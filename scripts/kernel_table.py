"""Build the kernel benchmark table of docs/kernels.md from a perfgate JSON results file.

    # written by: pytest --perfgate kernels/tests/test_perf.py --perfgate-json gate.json
    python scripts/kernel_table.py gate.json

Memory-bound kernels are judged against the measured device-to-device copy bandwidth of the same run
(test_copy_bandwidth); compute-bound ones against their torch counterpart measured in the same run.
"""

from __future__ import annotations

import json
import sys

TARGETS = {  # case stem -> (kind, target text)
    "vector_add": ("bw", ">= 90% of copy"),
    "mul_add": ("bw", ">= 90% of copy"),
    "fused_add_gelu": ("bw", ">= 90% of copy, >= 1.5x torch"),
    "softmax": ("bw", ">= 85% of copy, >= torch"),
    "layer_norm": ("bw", ">= 85% of copy, >= torch"),
    "rms_norm": ("bw", "(no target)"),
    "matmul": ("flops", ">= 90% of cuBLAS"),
    "flash_attention": ("flops", ">= 80% of SDPA flash"),
}


def main(path: str) -> None:
    cases = {c["case_id"].split("::")[1]: c for c in json.load(open(path))["cases"]}
    copy_gbps = cases["test_copy_bandwidth"]["gbps"]
    print(f"Ceiling: device-to-device copy {copy_gbps:,.0f} GB/s (bytes read + written), measured in the same run.\n")
    print("| case | time | achieved | % of copy | torch time | speed vs torch | target | met |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for name, c in sorted(cases.items()):
        stem = name.split("[")[0].removeprefix("test_")
        if stem not in TARGETS or "[torch" in name:
            continue
        torch_case = cases.get(name.replace("[triton", "[torch").replace("[cuda", "[torch"))
        ratio = torch_case["median_ms"] / c["median_ms"] if torch_case else None
        kind, target = TARGETS[stem]
        achieved = f"{c['tflops']:.0f} TFLOP/s" if kind == "flops" else f"{c['gbps']:,.0f} GB/s"
        pct = 100 * c["gbps"] / copy_gbps
        met = _met(stem, pct, ratio)
        pct_text = "-" if kind == "flops" else f"{pct:.0f}%"
        print(
            f"| {name} | {c['median_ms'] * 1e3:.1f} us | {achieved} | {pct_text} | "
            f"{torch_case['median_ms'] * 1e3:.1f} us | {ratio:.2f}x | {target} | {met} |"
        )


def _met(stem: str, pct: float, ratio: float | None) -> str:
    checks = {
        "vector_add": pct >= 90,
        "mul_add": pct >= 90,
        "fused_add_gelu": pct >= 90 and (ratio or 0) >= 1.5,
        "softmax": pct >= 85 and (ratio or 0) >= 1.0,
        "layer_norm": pct >= 85 and (ratio or 0) >= 1.0,
        "matmul": (ratio or 0) >= 0.9,
        "flash_attention": (ratio or 0) >= 0.8,
    }
    return "-" if stem not in checks else ("yes" if checks[stem] else "**no**")


if __name__ == "__main__":
    main(sys.argv[1])
