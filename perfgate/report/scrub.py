"""What may be published: profiler stderr, argv, notes and reasons pass through here before they reach
Markdown, the job summary, JSON or a PR comment.

A profiler's stderr can echo the environment (a stand-in nsys printed a variable straight into all four
outputs), and argv carries absolute paths and the runner's layout. Values that look like secrets are
masked, and so is the value of every secret-named environment variable wherever it appears (an assertion
that echoes `os.environ["API_KEY"]` shows no name, only the value), case ids included (a token in a
parametrize id); the hostname and absolute paths stay in the local history and are published only on
request (`publish_host = true`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from perfgate.compiled.records import CompiledCase
from perfgate.model import CaseResult, Comparison, Environment, Finding, GateResult, Run, UnmeasuredTest
from perfgate.store.verdicts import RunVerdicts

MASK = "***"

# a pattern for the *names* of secret-bearing variables, not a secret
_SECRET_NAME = (
    r"[A-Za-z0-9_.-]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION)"  # noqa: S105
    r"[A-Za-z0-9_.-]*"
)
_NAME_WORDS = ("key", "token", "secret", "passw", "passphrase", "credential", "auth", "cookie", "session")
# environment variables whose values are masked wherever they appear (GitHub masks only `secrets.*` in logs)
_SECRET_ENV_NAME = re.compile(r"(?i)KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE|DSN")
MIN_SECRET_VALUE = 8  # shorter values ("1", "true", a port) would mask ordinary text
# (pattern, replacement, words one of which the lower-cased text must hold for the pattern to match at all:
# a text without any is not searched, so scrubbing 10,000 findings costs little)
_PATTERNS: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = (
    # before the name rule: "Authorization: Bearer <token>" must lose the token, not only the word
    (re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {MASK}", ("bearer", "basic", "token")),
    # NAME=value / NAME: value / --name=value where NAME looks like a secret (quoted values too)
    (re.compile(rf"(?i)(\b{_SECRET_NAME}\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;|]+)"), rf"\1{MASK}", _NAME_WORDS),
    (re.compile(rf"(?i)(--{_SECRET_NAME}[= ])(\S+)"), rf"\1{MASK}", _NAME_WORDS),
    (re.compile(r"\bgh[opusr]_[A-Za-z0-9]{20,}\b"), MASK, ("gh",)),  # GitHub tokens
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"), MASK, ("github_pat_",)),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MASK, ("akia", "asia")),  # AWS access key ids
    (re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}\b"), MASK, ("xox",)),  # Slack tokens
    # Stripe-style live/test keys (sk_live_..., rk_test_..., sk-live-...) and OpenAI-style sk-... keys
    (re.compile(r"\b[sr]k[-_](?:live|test|proj)[-_][A-Za-z0-9_-]{8,}"), MASK, ("k-", "k_")),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"), MASK, ("sk-",)),
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
        MASK,
        ("-----begin",),
    ),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@"), rf"\1{MASK}@", ("://",)),  # user:pass@ in URLs
)
_HOME = re.compile(r"(?<![\w.])(?:/home|/Users)/[^/\s'\"]+|(?<![\w.])/root(?=/|\b)")
_ABS_PATH = re.compile(r"(?<![\w.:/~])(/(?:[^/\s'\"|,;:()\[\]]+/)+)([^/\s'\"|,;:()\[\]]+)")


def secret_env_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values of secret-named environment variables, longest first (the caller passes os.environ)."""
    values = {v for k, v in environ.items() if _SECRET_ENV_NAME.search(k) and len(v.strip()) >= MIN_SECRET_VALUE}
    return tuple(sorted(values, key=len, reverse=True))


def mask_values(text: str, values: Iterable[str]) -> str:
    for value in values:
        if value in text:
            text = text.replace(value, MASK)
    return text


def scrub_secrets(text: str) -> str:
    lowered = text.lower()
    for pattern, replacement, words in _PATTERNS:
        if any(w in lowered for w in words):
            text = pattern.sub(replacement, text)
            lowered = text.lower()
    return text


def _root_prefix(root: Path | None) -> str:
    return "" if root is None else str(Path(root).resolve()).rstrip("/") + "/"


def _scrub(text: str, prefix: str, publish_paths: bool) -> str:
    text = scrub_secrets(text)
    if publish_paths:
        return text
    if prefix:
        text = text.replace(prefix, "")
        text = text.replace(prefix.rstrip("/"), ".")
    if "/" not in text:  # no path to shorten
        return text
    text = _HOME.sub("~", text)
    return _ABS_PATH.sub(lambda m: "…/" + m.group(2), text)


class Scrubber:
    """Scrubs a gate result and a run for publication with one root and one policy. `secret_values` (see
    secret_env_values) are masked wherever they appear; `publish_host` keeps the hostname and paths."""

    def __init__(self, root: Path | None, publish_host: bool = False, secret_values: Iterable[str] = ()) -> None:
        self.root = root
        self.publish_host = publish_host
        self.secret_values = tuple(sorted(set(secret_values), key=len, reverse=True))
        self._prefix = _root_prefix(root)
        self._done: dict[str, str] = {}  # the same file path or note recurs in thousands of cases
        self._ids: dict[str, str] = {}

    def text(self, value: str) -> str:
        if value not in self._done:
            self._done[value] = _scrub(mask_values(value, self.secret_values), self._prefix, self.publish_host)
        return self._done[value]

    def case_id(self, value: str) -> str:
        """An identity: secrets masked (a token in a parametrize id), nothing else touched."""
        if value not in self._ids:
            self._ids[value] = scrub_secrets(mask_values(value, self.secret_values))
        return self._ids[value]

    def gate(self, gate: GateResult) -> GateResult:
        return replace(
            gate,
            comparisons=tuple(self._comparison(c) for c in gate.comparisons),
            explanations={self.case_id(k): tuple(self._comparison(c) for c in v) for k, v in gate.explanations.items()},
            findings=tuple(self._finding(f) for f in gate.findings),
            current_env=self._env(gate.current_env),
            baseline_env=self._env(gate.baseline_env),
        )

    def _finding(self, f: Finding) -> Finding:
        return replace(f, message=self.text(f.message), case_id=self.case_id(f.case_id))

    def _comparison(self, c: Comparison) -> Comparison:
        return replace(
            c,
            case_id=self.case_id(c.case_id),
            note=self.text(c.note) if c.note else c.note,
            kernel=self.case_id(c.kernel) if c.kernel else c.kernel,
        )

    def verdicts(self, verdicts: RunVerdicts | None) -> RunVerdicts | None:
        """Stored verdicts with their case ids scrubbed like the run's (an exported history)."""
        if verdicts is None:
            return None
        return replace(verdicts, metrics=tuple(replace(m, case_id=self.case_id(m.case_id)) for m in verdicts.metrics))

    def _env(self, env: Environment | None) -> Environment | None:
        if env is None or self.publish_host:
            return env
        return replace(env, hostname="")

    def run(self, run: Run) -> Run:
        info = replace(
            run.info,
            argv=self.text(run.info.argv),
            profile_settings=self.text(run.info.profile_settings),
            hostname=run.info.hostname if self.publish_host else "",
            unmeasured=tuple(self._unmeasured(u) for u in run.info.unmeasured),
        )
        env = run.environment if self.publish_host else replace(run.environment, hostname="")
        return replace(run, info=info, environment=env, results=tuple(self._case(r) for r in run.results))

    def _unmeasured(self, u: UnmeasuredTest) -> UnmeasuredTest:
        return replace(u, nodeid=self.case_id(u.nodeid), reason=self.text(u.reason))

    def _case(self, r: CaseResult) -> CaseResult:
        location = (self.text(r.location[0]), r.location[1]) if r.location else None
        return replace(
            r,
            case_id=self.case_id(r.case_id),
            nodeid=self.case_id(r.nodeid),
            profile_errors=tuple(self.text(e) for e in r.profile_errors),
            profile_notes=tuple(self.text(n) for n in r.profile_notes),
            location=location,
            compiled=self._compiled(r.compiled),
        )

    def _compiled(self, c: CompiledCase | None) -> CompiledCase | None:
        """A case's arguments (a string argument may be a token) and what could not be read (a tool's stderr)."""
        if c is None:
            return None
        kernels = tuple(replace(k, detail=self.text(k.detail)) for k in c.kernels)
        return replace(c, kernels=kernels, inputs=self.text(c.inputs), notes=tuple(self.text(n) for n in c.notes))


def export_scrubber(root: Path | None, publish_host: bool, environ: Mapping[str, str]) -> Scrubber:
    """The scrubber for what leaves the machine: outputs, the uploaded history (`perfgate db export`)."""
    return Scrubber(root, publish_host, secret_env_values(environ))


def terminal_scrubber(environ: Mapping[str, str]) -> Scrubber:
    """The scrubber for the terminal: a CI log is published too, so secrets are masked; paths and the
    hostname stay (the terminal is the user's own)."""
    return Scrubber(None, publish_host=True, secret_values=secret_env_values(environ))
