"""A/B mode: the head measured side by side with a base commit, on one GPU, in one job (docs/ab.md).

The data flow, one module each:

    setup.py      the request checked, the trees, the base's selection, the cached A/A, the rounds' plan
    worktree.py   REF -> its commit, checked out in a cached git worktree outside the checkout
    workers.py    one long-lived worker process per tree (its own sys.path and cwd), started and stopped
    protocol.py   the JSON-lines messages between the coordinator and a worker, over pipes, with timeouts
    serve.py      the worker's side: a case waits at its measure call and serves prepare / round commands
    schedule.py   which cases pair up across the trees, and the order of the sides in each round
    rounds.py     the rounds as records: the plan, each side's rounds of a case, the whole Measurement
    coordinator.py the rounds: base, head (and a second base process for the A/A) in turn, per case
    pairs.py      one pair of workers (and the A/A twin) started, walked through their tests, stopped
    host/         the shared host: every side in one process (sharing, the baton, what it hands over)
    ratios.py     a case's rounds -> per-round log ratios, its A/A, the ratio decision (perfgate/gate/ratio.py,
                  beside the other decision rules), a fresh pair's for a call
    rows.py       the decisions and each side's results -> a case's comparison rows (time, speedup, memory,
                  profiler metrics, the speedup target, one-sided and failed cases, the static gate)
    compare.py    the whole run: every case's rows -> the gate result and its findings (head against base)
    findings.py   what only A/B finds, and each ratio's pairs of processes for the ceiling
    parity.py     what strict A/B holds the pull request to: the base's allow_missing, its configuration
    aa.py         the A/A measurement (base against itself), cached per GPU model and base commit
    measured.py   the first pair's rounds, the profilers, the verdicts, a fresh pair for the calls, the
                  checked-out worktrees verified
    compared.py   what was measured, as gate/run.py's `finish` takes it; both sides as runs; the A/A cache
    runs.py       both sides as history records: kinds, pairing, bounded samples
    costs.py      each phase's seconds (what the run prints and the report shows)
    run.py        A/B's way of producing comparisons: worktree -> workers -> rounds -> verdicts -> fresh
                  pair; then gate/run.py's `finish`, the tail baseline mode shares (findings, store, outputs)
    bisect.py     the same A/B measurement at each step of a binary search over commits

Nothing here imports pytest: the plugin (pytest_plugin/ab.py) and the command line (cli/ab.py) are thin
adapters over run.py and bisect.py, and the worker's pytest side calls serve.py.
"""
