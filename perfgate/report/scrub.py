"""What may be published: profiler stderr, argv, notes and reasons pass through here before they reach
Markdown, the job summary, JSON or a PR comment.

A profiler's stderr can echo the environment (a stand-in nsys printed a variable straight into all four
outputs), and argv carries absolute paths and the runner's layout. Values that look like secrets are
masked; the hostname and absolute paths stay in the local history and are published only on request
(`publish_host = true`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from perfgate.model import CaseResult, Comparison, Environment, GateResult, Run

MASK = "***"

# a pattern for the *names* of secret-bearing variables, not a secret
_SECRET_NAME = (r"[A-Za-z0-9_.-]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION)"  # noqa: S105
                r"[A-Za-z0-9_.-]*")
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # before the name rule: "Authorization: Bearer <token>" must lose the token, not only the word
    (re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {MASK}"),
    # NAME=value / NAME: value / --name=value where NAME looks like a secret (quoted values too)
    (re.compile(rf"(?i)(\b{_SECRET_NAME}\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;|]+)"), rf"\1{MASK}"),
    (re.compile(rf"(?i)(--{_SECRET_NAME}[= ])(\S+)"), rf"\1{MASK}"),
    (re.compile(r"\bgh[opusr]_[A-Za-z0-9]{20,}\b"), MASK),  # GitHub tokens
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"), MASK),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MASK),  # AWS access key ids
    (re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}\b"), MASK),  # Slack tokens
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.S), MASK),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@"), rf"\1{MASK}@"),  # user:pass@ in URLs
)
_HOME = re.compile(r"(?<![\w.])(?:/home|/Users)/[^/\s'\"]+|(?<![\w.])/root(?=/|\b)")
_ABS_PATH = re.compile(r"(?<![\w.:/~])(/(?:[^/\s'\"|,;:()\[\]]+/)+)([^/\s'\"|,;:()\[\]]+)")


def scrub_secrets(text: str) -> str:
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def scrub_text(text: str, root: Path | None = None, publish_paths: bool = False) -> str:
    """Mask secrets; unless paths may be published: paths under the project root become relative, home
    directories `~`, and other absolute paths keep only their last component."""
    text = scrub_secrets(text)
    if publish_paths:
        return text
    if root is not None:
        prefix = str(Path(root).resolve()).rstrip("/") + "/"
        text = text.replace(prefix, "")
        text = text.replace(prefix.rstrip("/"), ".")
    text = _HOME.sub("~", text)
    return _ABS_PATH.sub(lambda m: "…/" + m.group(2), text)


class Scrubber:
    """Scrubs a gate result and a run for publication with one root and one policy."""

    def __init__(self, root: Path | None, publish_host: bool = False) -> None:
        self.root = root
        self.publish_host = publish_host

    def text(self, value: str) -> str:
        return scrub_text(value, self.root, publish_paths=self.publish_host)

    def gate(self, gate: GateResult) -> GateResult:
        return replace(gate, comparisons=tuple(self._comparison(c) for c in gate.comparisons),
                       explanations={k: tuple(self._comparison(c) for c in v) for k, v in gate.explanations.items()},
                       findings=tuple(replace(f, message=self.text(f.message)) for f in gate.findings),
                       current_env=self._env(gate.current_env), baseline_env=self._env(gate.baseline_env))

    def _comparison(self, c: Comparison) -> Comparison:
        return replace(c, note=self.text(c.note)) if c.note else c

    def _env(self, env: Environment | None) -> Environment | None:
        if env is None or self.publish_host:
            return env
        return replace(env, hostname="")

    def run(self, run: Run) -> Run:
        info = replace(run.info, argv=self.text(run.info.argv), profile_settings=self.text(run.info.profile_settings),
                       hostname=run.info.hostname if self.publish_host else "",
                       unmeasured=tuple(replace(u, reason=self.text(u.reason)) for u in run.info.unmeasured))
        env = run.environment if self.publish_host else replace(run.environment, hostname="")
        return replace(run, info=info, environment=env, results=tuple(self._case(r) for r in run.results))

    def _case(self, r: CaseResult) -> CaseResult:
        location = (self.text(r.location[0]), r.location[1]) if r.location else None
        return replace(r, profile_errors=tuple(self.text(e) for e in r.profile_errors),
                       profile_notes=tuple(self.text(n) for n in r.profile_notes), location=location)

