#!/usr/bin/env bash
# Issue 34, requirement 5 on one GPU (~4 min): a cold strict gate of the bundled suite with main's code, then
# with this checkout's; this checkout's warm, restored-cache and static (de-tuned) gates and the driver
# cross-check. Before either gate, the libraries' files are read once (page cache) and the imports of a plain
# collection are listed (-X importtime), so neither cold gate pays the disk and the "before" phase is explained.
#
#   git -C /work/main archive main | gzip > .device-env/maintree.tgz   # main's tree, carried (optional; .device-env is ignored and carried)
#   source .device-env/setup.sh >/dev/null && bash lab/gpu/kernels_cold.sh
#
# Output: $OUT/kernels_session.md (this checkout), $OUT/main/kernels_session.md (main), all of it in
# $OUT/kernels_cold.log.
set -u
export PYTHONUNBUFFERED=1
exec > >(tee "$OUT/kernels_cold.log") 2>&1
here=$(pwd)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "cores: $(nproc)"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
python3 -X importtime -m pytest -s -q -p no:cacheprovider --collect-only kernels/tests/test_perf.py \
  2>/tmp/k5-importtime.txt >/dev/null
echo "imports of a plain collection (cumulative us, the largest):"
grep '^import time:' /tmp/k5-importtime.txt | sort -t'|' -k2,2nr | head -25
maintree=${MAINTREE:-.device-env/maintree.tgz}
if [ -f "$maintree" ]; then
  rm -rf /tmp/main /tmp/main-tmp && mkdir -p /tmp/main /tmp/main-tmp "$OUT/main"
  tar -xzf "$maintree" -C /tmp/main
  # the same plain collection as this checkout had above (pytest's rewritten modules, the page cache)
  (cd /tmp/main && PYTHONPATH="/tmp/main:${PYTHONPATH:-}" python3 -m pytest -q -p no:cacheprovider --collect-only \
    kernels/tests/test_perf.py >/dev/null 2>&1)
  # main's session: its cold step alone
  sed -i -E 's/\("(warm gate|static gate|A\/B|restored gate|cross-check)", [0-9]+,/("\1", 9999,/' \
    /tmp/main/lab/gpu/kernels_session.py
  (cd /tmp/main && OUT="$OUT/main" TMPDIR=/tmp/main-tmp PYTHONPATH="/tmp/main:${PYTHONPATH:-}" \
    timeout 150 python3 lab/gpu/kernels_session.py --budget-s 120)
  echo "main's perfgate: $(cd /tmp/main && PYTHONPATH=/tmp/main:${PYTHONPATH:-} python3 -c 'import perfgate; print(perfgate.__file__)')"
fi
cd "$here" && timeout 240 python3 lab/gpu/kernels_session.py --budget-s 180 --steps cold,warm,static,restored,cross-check
# one more warm gate under cProfile: where the time outside the cases goes (before and after the timing phase)
c=$(python3 -c "import tempfile; print(tempfile.gettempdir())")/perfgate-ab-lab/kernels/cold
TRITON_CACHE_DIR=$c/triton PERFGATE_KERNEL_CACHE=$c/kernels PERFGATE_CUBIN_CACHE=$c/cubins timeout 90 \
  python3 -m cProfile -o /tmp/k5-warm_gate.prof -m pytest -q -p no:randomly -p no:cacheprovider \
  kernels/tests/test_perf.py --perfgate --perfgate-strict --perfgate-db=/tmp/k5-prof.db \
  --perfgate-baseline-file=baselines/nvidia-h100-80gb-hbm3.json --perfgate-allow-env-mismatch \
  --perfgate-confirm-runs=0 2>&1 | grep -E "^perfgate: (timing phase|gate)"
python3 -c "import pstats; pstats.Stats('/tmp/k5-warm_gate.prof').sort_stats('cumulative').print_stats(60)" \
  | grep -E "^ +[0-9]" | head -60 | cut -c1-200
