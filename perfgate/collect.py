"""What a pytest session measured -> one Run record (with a fresh identity, its git state and command)."""

from __future__ import annotations

import uuid

from perfgate.measure.environment import command_line, git_info
from perfgate.model import Run, RunInfo
from perfgate.session import PerfgateSession


def build_run(state: PerfgateSession, profile_settings: str = "") -> Run:
    from perfgate.plugin_setup import utc_now

    assert state.environment is not None  # set at configure time whenever the gate is enabled
    commit, branch, dirty = git_info(state.rootdir)
    info = RunInfo(started_at=state.started_at, finished_at=utc_now(), git_commit=commit, git_branch=branch,
                   git_dirty=dirty, hostname=state.environment.hostname, argv=command_line(),
                   profile_settings=profile_settings, run_uid=uuid.uuid4().hex,
                   unmeasured=tuple(state.unmeasured[k] for k in sorted(state.unmeasured)))
    return Run(info=info, environment=state.environment,
               results=tuple(state.results[k] for k in sorted(state.results)))
