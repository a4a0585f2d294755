"""The options of A/B mode, base and head side by side on one GPU (docs/ab.md): rows of the one option table
(options.py).
"""

from __future__ import annotations

from perfgate.config import validate as v
from perfgate.config.option import Arg, Option
from perfgate.model import AbProcess

AB: tuple[Option, ...] = (
    # --- A/B mode: base and head side by side on one GPU (docs/ab.md) ------------------------------------
    Option(
        "base",
        "A/B mode: measure the head against this git ref (branch, tag, commit), checked out in a "
        "cached worktree and alternated with the head in rounds on the same GPU; no baseline file needed",
        v.text,
        flag="--perfgate-base",
        metavar="REF",
    ),
    Option(
        "ab_rounds",
        "A/B mode: rounds per case (each side measured once per round, in random order)",
        v.integer(3, 1000),
        key="ab_rounds",
        flag="--perfgate-ab-rounds",
        cli="--rounds",
        arg=Arg.INT,
        metavar="N",
    ),
    Option(
        "ab_fresh_pair",
        "A/B mode: a case called regressed or improved is measured again by a fresh base, head and "
        "A/A process, and judged on both pairs (an offset between two processes is not the code)",
        v.boolean,
        key="ab_fresh_pair",
    ),
    Option(
        "ab_process",
        "A/B mode: 'shared' runs base and head in one process, each tree's modules imported side by side "
        "(what differs between two processes cancels); 'separate' a process per tree (any code: CUDA "
        "extensions, C++); 'auto' shares unless a tree holds native code (.so, .cu, .cpp, ...)",
        v.choice(AbProcess),
        key="ab_process",
        flag="--perfgate-ab-process",
        cli="--process",
        metavar="auto|shared|separate",
    ),
    Option(
        "move_inputs",
        "A/B mode: copy the case's CUDA tensor arguments to a fresh place in memory every round, so "
        "where they sit averages out instead of being a fixed offset of one process",
        v.boolean,
        key="move_inputs",
        marker=True,
        measure=True,
    ),
    Option(
        "worktree_dir",
        "A/B mode: where base checkouts and their build caches are kept (default $XDG_CACHE_HOME/perfgate/worktrees)",
        v.path,
        key="worktree_dir",
        flag="--perfgate-worktree-dir",
        cli="--worktree-dir",
        arg=Arg.PATH,
        metavar="DIR",
    ),
    Option(
        "ab_skip_same_code",
        "A/B mode: a case whose sides launch the same compiled code (same SASS, launches, inputs and library "
        "versions) is reported 'unchanged (same code)' without measuring it (--perfgate-ab-measure-same-code: "
        "measure it anyway)",
        v.boolean,
        key="ab_skip_same_code",
        flag="--perfgate-ab-measure-same-code",
        cli="--measure-same-code",
        arg=Arg.NO_FLAG,
    ),
    Option(
        "ab_timeout_s",
        "A/B mode: the longest a worker may take for one step (collecting, a test, compiling "
        "a case, a round) before it is called hung (s)",
        v.number(1.0, 86_400.0),
        key="ab_timeout_s",
    ),
)
