"""A/B mode: the head measured side by side with a base commit, on one GPU, in one job (docs/ab.md).

The data flow, one module each:

    worktree.py   REF -> its commit, checked out in a cached git worktree outside the checkout
    workers.py    one long-lived worker process per tree (its own sys.path and cwd), started and stopped
    protocol.py   the JSON-lines messages between the coordinator and a worker, over pipes, with timeouts
    serve.py      the worker's side: a case waits at its measure call and serves prepare / round commands
    schedule.py   which cases pair up across the trees, and the order of the sides in each round
    coordinator.py the rounds: base, head (and a second base process for the A/A) in turn, per case
    compare.py    what the rounds say: per case, the ratio verdict (perfgate/gate/ratio.py, beside the other
                  decision rules) and the other metrics, head against base
    host/         the shared host: every side in one process (sharing, the baton, what it hands over)
    aa.py         the A/A measurement (base against itself), cached per GPU model and base commit
    run.py        the one orchestration: worktree -> workers -> rounds -> verdicts -> store -> outputs
    bisect.py     the same A/B measurement at each step of a binary search over commits

Nothing here imports pytest: the plugin (pytest_plugin/ab.py) and the command line (cli/ab.py) are thin
adapters over run.py and bisect.py, and the worker's pytest side calls serve.py.
"""
