"""What may be published: profiler stderr, argv, notes and reasons pass through here before they reach
Markdown, the job summary, JSON or a PR comment.

Secrets, and only secrets, are masked (`***`, as GitHub masks them in logs):
- tokens in a format of their own, wherever they appear (case ids included): gitleaks' 216 default rules and
  a few more (secret_patterns.py);
- in free text (notes, reasons, stderr, argv, never identifiers), the value after a secret-named key
  (`API_KEY=...`, `"password": "..."`, `--token ...`, `Authorization: ...`);
- the value of every secret-named environment variable (`*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `API_KEY`,
  GitHub's own `GITHUB_TOKEN`, `ACTIONS_RUNTIME_TOKEN`, an action's `INPUT_TOKEN`), wherever it appears:
  an assertion that echoes `os.environ["API_KEY"]` shows no name, only the value. A name that is secret only
  sometimes (`CACHE_KEY`, `GPG_KEY`, `PASS_THROUGH`) has its value masked only when it looks random.
A case id is an identity: nothing but a secret in it changes (`test_tokenizer.py` stays; an environment value
that reads as a name, `API_KEY=kernels/tests`, is masked in free text only), and two ids that
differ only in their secrets stay apart (`t[***]`, `t[***2]`). A literal `t[***]` (an id without a
secret) keeps its name in whatever order ids come: the batch's literal names are reserved first and a masked
id takes the next free number (db export stores both; a history, a PR comment tell them apart). The
hostname and absolute paths stay in the local history and are published only on request (`publish_host = true`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from perfgate.compiled.records import CompiledCase
from perfgate.model import CaseResult, Comparison, Environment, Finding, GateResult, Run, UnmeasuredTest
from perfgate.report.secret_patterns import Span, find, is_placeholder, merge, shannon_entropy
from perfgate.store.verdicts import RunVerdicts

MASK = "***"
MIN_SECRET_VALUE = 8  # shorter values ("1", "true", a port) would mask ordinary text

# a key names a secret when one of its words is one of these ("tokenizer" and "key_cache" are not)
_SECRET_WORDS = frozenset(
    {
        "token", "tokens", "secret", "secrets", "password", "passwords", "passwd", "pwd", "passphrase",
        "credential", "credentials", "creds", "cookie", "auth", "authorization", "apikey", "accesskey",
        "secretkey", "privatekey", "authtoken", "accesstoken", "refreshtoken", "sessiontoken", "sessionid",
    }
)  # fmt: skip
# "key" alone is a dictionary key, a sort key, a cache key; after one of these words it is a credential
_KEY_QUALIFIERS = frozenset(
    {"api", "access", "secret", "private", "auth", "signing", "encryption", "master", "client", "account",
     "license", "service", "ssh", "deploy", "session", "app", "subscription", "storage", "admin", "write"}
)  # fmt: skip
# environment names that are clearly secret: names_a_secret's words, and a DSN (it carries a password);
# "key", "pass", "private", "signature" alone name secrets only sometimes (GPG_KEY holds a public
# fingerprint, CACHE_KEY and SORT_KEY a name, PASS_THROUGH a flag): their values are masked only when random
_ENV_WORDS = _SECRET_WORDS | {"dsn"}
_MAYBE_ENV_WORDS = frozenset({"key", "keys", "pass", "private", "signature"})
# a value that reads as a name or a path (`test_sorted_cache`, `kernels/tests`): lower-case words, no digit.
# Masked in identifiers, it changed every case id holding it; no generated secret has this shape
_NAME_LIKE = re.compile(r"[a-z]+(?:[_./-][a-z]+)*(?:/[a-z]+(?:[_.-][a-z]+)*)*")
_NOT_SECRET_ENV = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK"})
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# key = value, key: value, "key": "value", key => value (a single ':' followed by a space or a quote: not
# `file.py:12:` or `a::b`), and --key value / --key=value on a command line
_ASSIGNMENT = re.compile(
    r"""(?<![\w.-])(["']?)([A-Za-z_][\w.-]*)\1(\s*(?:=>?|:(?=\s|["']))\s*)"""
    r"""("[^"]*"|'[^']*'|\$?\{\{[^}]*\}\}|[^\s,;|)\]}'"]+)"""
)
# the value sits in a lookahead so every flag is tried on its own: `--perfgate --token=x` must not read
# `--token=x` as the value of `--perfgate` and skip it; a value after a space is not the next flag
_FLAG = re.compile(r"(?<![\w-])--([A-Za-z][\w-]*)(?==([^\s'\"]+)|\s+(?!--)([^\s'\"]+))")
_HOME = re.compile(r"(?<![\w.])(?:/home|/Users)/[^/\s'\"]+|(?<![\w.])/root(?=/|\b)")
_ABS_PATH = re.compile(r"(?<![\w.:/~])(/(?:[^/\s'\"|,;:()\[\]]+/)+)([^/\s'\"|,;:()\[\]]+)")
# an HTTP header's credential: Authorization's value after its scheme word, an API key header's value, a Cookie
_HEADER = re.compile(
    r"(?i)\b(?:(?:proxy-)?authorization\s*:\s*(?:[a-z-]+\s+)?([^\s,;]+)|x-api-key\s*:\s*([^\s,;]+)|cookie\s*:\s*([^\r\n]+))"
)


def words(name: str) -> list[str]:
    """The words of a name: `GITHUB_TOKEN` -> github, token; `apiKey` -> api, key; `test_tokenizer.py` ->
    test, tokenizer, py."""
    return [w.lower() for w in _WORD.findall(name)]


def names_a_secret(name: str) -> bool:
    """Whether a key in free text names a secret: a secret word, or "key" after a qualifier (api_key)."""
    ws = words(name)
    return any(
        w in _SECRET_WORDS or (w in ("key", "keys") and i > 0 and ws[i - 1] in _KEY_QUALIFIERS)
        for i, w in enumerate(ws)
    )


def is_secret_env_name(name: str) -> bool:
    """A name that is clearly secret (API_KEY, GITHUB_TOKEN, DB_PASSWORD, SENTRY_DSN; not CACHE_KEY)."""
    return name not in _NOT_SECRET_ENV and (names_a_secret(name) or any(w in _ENV_WORDS for w in words(name)))


def _may_name_a_secret(name: str) -> bool:
    return name not in _NOT_SECRET_ENV and any(w in _MAYBE_ENV_WORDS for w in words(name))


def _looks_random(value: str) -> bool:
    """A token format, or random text: digits and both cases (not a hex fingerprint, not `matmul-fp16`)."""
    mixed = any(c.isdigit() for c in value) and value.lower() != value and value.upper() != value
    return bool(find(value)) or (mixed and shannon_entropy(value) > 3.5)


def secret_env_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values of secret-named environment variables, longest first (the caller passes os.environ): every
    value of a clearly secret name, a random-looking one of a name that may be secret (`*_KEY`). Placeholders
    and paths (`$VAR`, `/home/...`, `true`) and values under 8 characters are left alone."""
    values = set()
    for k, v in environ.items():
        value = v.strip()
        if len(value) < MIN_SECRET_VALUE or is_placeholder(value):
            continue
        if is_secret_env_name(k) or (_may_name_a_secret(k) and _looks_random(value)):
            values.add(v)
    return tuple(sorted(values, key=len, reverse=True))


def value_spans(text: str, values: Iterable[str]) -> list[Span]:
    spans = []
    for value in values:
        at = text.find(value)
        while at != -1:
            spans.append((at, at + len(value)))
            at = text.find(value, at + len(value))
    return spans


def _may_be_secret(value: str) -> bool:
    """A value after a secret-named key that can be one: not a placeholder (`$VAR`, `${{ secrets.X }}`),
    not the mask, not a short number (`token: 12 per step`)."""
    if not value or value == MASK or is_placeholder(value):
        return False
    return not (len(value) < 6 and value.replace(".", "", 1).isdigit())


# a token cut by a length limit (`one_line`'s "…"): too short for its format's rule, still part of a secret
_CUT = re.compile(r"(\S{12,})…$")


def cut_token_spans(text: str) -> list[Span]:
    m = _CUT.search(text)
    if m is None or " " in m.group(1):
        return []
    word = m.group(1)
    looks_random = shannon_entropy(word) > 3.5 and any(c.isdigit() for c in word) and not word.startswith("/")
    return [m.span(1)] if looks_random else []


def assignment_spans(text: str) -> list[Span]:
    return key_value_spans(text) + _flag_spans(text)


def key_value_spans(text: str) -> list[Span]:
    spans = []
    for m in _ASSIGNMENT.finditer(text):
        value, start = m.group(4), m.start(4)
        if value[:1] in "\"'":
            value, start = value[1:-1], start + 1
        if names_a_secret(m.group(2)) and _may_be_secret(value) and "authorization" not in m.group(2).lower():
            spans.append((start, start + len(value)))
    for m in _HEADER.finditer(text):
        group = next(g for g in (1, 2, 3) if m.group(g) is not None)
        spans.append(m.span(group))
    return spans


def _flag_spans(text: str) -> list[Span]:
    spans = []
    for m in _FLAG.finditer(text):
        group = 2 if m.group(2) is not None else 3
        if names_a_secret(m.group(1)) and not is_placeholder(m.group(group)):
            spans.append(m.span(group))
    return spans


def masked(text: str, spans: list[Span], mask: str = MASK) -> str:
    for start, end in reversed(merge(spans)):
        text = text[:start] + mask + text[end:]
    return text


def scrub_secrets(text: str, values: Iterable[str] = ()) -> str:
    """Free text with its secrets masked: token formats, secret-named keys' values, `values`."""
    return masked(text, value_spans(text, values) + find(text) + assignment_spans(text) + cut_token_spans(text))


def _root_prefix(root: Path | None) -> str:
    return "" if root is None else str(Path(root).resolve()).rstrip("/") + "/"


def _scrub(text: str, values: tuple[str, ...], prefix: str, publish_paths: bool) -> str:
    text = scrub_secrets(text, values)
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
        # an identity changes for a secret only: a value that reads as a name (API_KEY=kernels/tests) is
        # masked in free text, never in a case id or a kernel name
        self._id_values = id_values(self.secret_values)
        self._prefix = _root_prefix(root)
        self._done: dict[str, str] = {}  # the same file path or note recurs in thousands of cases
        self._ids: dict[str, str] = {}
        self._names: dict[str, str] = {}
        self._owners: dict[str, str] = {}  # published id -> the id it stands for
        self._numbers: dict[str, int] = {}  # secret -> its number in published ids (***, ***2, ...)

    def text(self, value: str) -> str:
        if value not in self._done:
            self._done[value] = _scrub(value, self.secret_values, self._prefix, self.publish_host)
        return self._done[value]

    def identifier(self, value: str) -> str:
        """A name (a branch, a kernel, a group): its secrets masked, nothing else touched."""
        if value not in self._names:
            self._names[value] = masked(value, value_spans(value, self._id_values) + find(value))
        return self._names[value]

    def case_id(self, value: str) -> str:
        """An identity: secrets masked (a token in a parametrize id), nothing else touched; ids that differ
        only in their secrets stay apart (the second secret seen is `***2`), and no masked id takes the
        name of an id that holds none (a literal `t[***]` keeps its name; see reserve)."""
        if value not in self._ids:
            self._ids[value] = self._published_id(value)
        return self._ids[value]

    def reserve(self, ids: Iterable[str]) -> None:
        """Claim the names of the ids without a secret before any id is published: a masked id then never
        takes one of them, whatever order the ids are published in. gate(), run() and verdicts() reserve
        their own ids; a caller that publishes several batches through one scrubber reserves them all first."""
        for value in ids:
            if value not in self._ids and not self._id_spans(value):
                self._owners.setdefault(value, value)

    def _id_spans(self, value: str) -> list[Span]:
        return merge(value_spans(value, self._id_values) + find(value))

    def _published_id(self, value: str) -> str:
        spans = self._id_spans(value)
        if not spans:
            out, n = value, 1
            while self._owners.get(out, value) != value:
                # a masked id took this name before the literal was seen (no reserve): the literal is told
                # apart in words, never merged with a secret's id nor renamed into a mask's form
                out, n = f"{value} (literal{'' if n == 1 else f' {n}'})", n + 1
            self._owners[out] = value
            return out
        first = value[spans[0][0] : spans[0][1]]
        for _ in range(len(self._owners) + 2):  # each try skips a name taken: at most one per id published
            out = value
            for a, b in reversed(spans):
                n = self._numbers.setdefault(value[a:b], len(self._numbers) + 1)
                out = out[:a] + (MASK if n == 1 else f"{MASK}{n}") + out[b:]
            if self._owners.get(out, value) == value:
                break
            self._numbers[first] = max(self._numbers.values()) + 1
        self._owners[out] = value
        return out

    def gate(self, gate: GateResult) -> GateResult:
        self.reserve(gate_ids(gate))
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
            kernel=self.identifier(c.kernel) if c.kernel else c.kernel,
        )

    def verdicts(self, verdicts: RunVerdicts | None) -> RunVerdicts | None:
        """Stored verdicts with their case ids scrubbed like the run's (an exported history)."""
        if verdicts is None:
            return None
        self.reserve(m.case_id for m in verdicts.metrics)
        return replace(verdicts, metrics=tuple(replace(m, case_id=self.case_id(m.case_id)) for m in verdicts.metrics))

    def _env(self, env: Environment | None) -> Environment | None:
        if env is None or self.publish_host:
            return env
        return replace(env, hostname="")

    def run(self, run: Run) -> Run:
        self.reserve(run_ids(run))
        info = replace(
            run.info,
            argv=self.text(run.info.argv),
            git_branch=self.identifier(run.info.git_branch),
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
            metrics=tuple(replace(m, kernel=self.identifier(m.kernel)) if m.kernel else m for m in r.metrics),
            autotune=tuple((self.identifier(k), self.identifier(v)) for k, v in r.autotune),
            speedup=replace(r.speedup, reference=self.identifier(r.speedup.reference)) if r.speedup else None,
            group=self.identifier(r.group),
            extra_info=tuple((self.identifier(k), self._value(v)) for k, v in r.extra_info),
            params=tuple((self.identifier(k), self._value(v)) for k, v in r.params),
            compiled=self._compiled(r.compiled),
        )

    def _value(self, value: Any) -> Any:
        """A JSON value (pytest-benchmark's extra_info) with every text in it scrubbed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._value(v) for v in value]
        if isinstance(value, dict):
            return {self.identifier(str(k)): self._value(v) for k, v in value.items()}
        return value

    def _compiled(self, c: CompiledCase | None) -> CompiledCase | None:
        """A case's arguments (a string argument may be a token) and what could not be read (a tool's stderr)."""
        if c is None:
            return None
        kernels = tuple(replace(k, detail=self.text(k.detail)) for k in c.kernels)
        return replace(c, kernels=kernels, inputs=self.text(c.inputs), notes=tuple(self.text(n) for n in c.notes))


def gate_ids(gate: GateResult) -> list[str]:
    """Every case id a gate result publishes (for Scrubber.reserve)."""
    compared = [c for cs in (gate.comparisons, *gate.explanations.values()) for c in cs]
    return [c.case_id for c in compared] + list(gate.explanations) + [f.case_id for f in gate.findings]


def run_ids(run: Run) -> list[str]:
    """Every case id and node id a run publishes (for Scrubber.reserve)."""
    cases = [i for r in run.results for i in (r.case_id, r.nodeid)]
    return cases + [u.nodeid for u in run.info.unmeasured]


def export_scrubber(root: Path | None, publish_host: bool, environ: Mapping[str, str]) -> Scrubber:
    """The scrubber for what leaves the machine: outputs, the uploaded history (`perfgate db export`)."""
    return Scrubber(root, publish_host, secret_env_values(environ))


def scrub_rendered(text: str, environ: Mapping[str, str]) -> str:
    """A text rendered from a results file that another job wrote (a PR comment, annotations): token
    formats and this job's secret values masked, as in case ids, so the rendered ids match the file's."""
    values = id_values(secret_env_values(environ))
    return masked(text, value_spans(text, values) + find(text))


def id_values(values: Iterable[str]) -> tuple[str, ...]:
    """The secret values masked in identifiers: not those that read as a name (`kernels/tests`)."""
    return tuple(v for v in values if not _NAME_LIKE.fullmatch(v.strip()))


def terminal_scrubber(environ: Mapping[str, str]) -> Scrubber:
    """The scrubber for the terminal: a CI log is published too, so secrets are masked; paths and the
    hostname stay (the terminal is the user's own)."""
    return Scrubber(None, publish_host=True, secret_values=secret_env_values(environ))
