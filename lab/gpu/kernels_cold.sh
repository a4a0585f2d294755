#!/usr/bin/env bash
# Issue 34, requirement 5 on one GPU (~4 min): a cold strict gate of the bundled suite with main's code, then
# with this checkout's; this checkout's warm, restored-cache and static (de-tuned) gates and the driver
# cross-check. Before either gate, the libraries' files are read once (page cache) and the imports of a plain
# collection are listed (-X importtime), so neither cold gate pays the disk and the "before" phase is explained.
#
#   git -C /work/main archive main | gzip > .device-env/maintree.tgz   # main's tree, carried (optional; .device-env is ignored and carried)
#   source .device-env/setup.sh >/dev/null && bash lab/gpu/kernels_cold.sh
#
# Output: $OUT/kernels_session.md (this checkout), $OUT/main/kernels_session.md (main), $OUT/importtime.txt.
set -u
export PYTHONUNBUFFERED=1
here=$(pwd)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "cores: $(nproc)"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
python3 -X importtime -m pytest -s -q -p no:cacheprovider --collect-only kernels/tests/test_perf.py \
  2>"$OUT/importtime.txt" >/dev/null
echo "imports of a plain collection (cumulative us, the largest):"
grep '^import time:' "$OUT/importtime.txt" | sort -t'|' -k2,2nr | head -25
if [ -f .device-env/maintree.tgz ]; then
  rm -rf /tmp/main /tmp/main-tmp && mkdir -p /tmp/main /tmp/main-tmp "$OUT/main"
  tar -xzf .device-env/maintree.tgz -C /tmp/main
  # main's session: its cold step alone
  sed -i -E 's/\("(warm gate|static gate|A\/B|restored gate|cross-check)", [0-9]+,/("\1", 9999,/' \
    /tmp/main/lab/gpu/kernels_session.py
  (cd /tmp/main && OUT="$OUT/main" TMPDIR=/tmp/main-tmp PYTHONPATH="/tmp/main:${PYTHONPATH:-}" \
    timeout 150 python3 lab/gpu/kernels_session.py --budget-s 120)
  echo "main's perfgate: $(cd /tmp/main && PYTHONPATH=/tmp/main:${PYTHONPATH:-} python3 -c 'import perfgate; print(perfgate.__file__)')"
fi
cd "$here" && timeout 240 python3 lab/gpu/kernels_session.py --budget-s 180 --steps cold,warm,static,restored,cross-check
