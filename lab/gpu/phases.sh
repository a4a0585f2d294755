# Shared by the GPU session scripts in lab/gpu: run a phase with its own time limit, log it, keep going.
#   phase NAME LIMIT_S cmd args...     -> $R/NAME.log; one line "NAME rc=.. wall=.. s" in $R/steps.log
# Every phase's results are added to $OUT/results.tar as soon as it ends, so a call cut short still
# returns what it finished (PHASES_TAR=0: no tar, for scripts whose $R is a scratch directory).
OUT=${OUT:-gpu-results}
R=${R:-$OUT/r}
mkdir -p "$R"
export PYTHONUNBUFFERED=1
phase() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$R/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc wall=$((SECONDS - t0)) s" | tee -a "$R/steps.log"
  [ "${PHASES_TAR:-1}" = 1 ] && tar cf "$OUT/results.tar" -C "$(dirname "$R")" "$(basename "$R")" 2>/dev/null
  return 0
}
