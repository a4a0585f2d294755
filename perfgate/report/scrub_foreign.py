"""What this job publishes of what another job wrote (a results file, a Markdown summary, a refusal quoting
either): the job that ran the pull request's code scrubbed it with its own Scrubber (scrub.py), but its file
is its word only; this trusted job masks again what it publishes (annotations, the PR comment, the commit
status, the log). Identities (case ids, kernels) as scrub_rendered masks them, so they stay whole and match
the file's; free text (messages, notes, reasons, argv, stderr) also loses a secret-named key's value
(`password: ...`, `API_KEY=...`, `--token ...`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from perfgate.report.scrub import (
    assignment_spans,
    cut_token_spans,
    id_values,
    key_value_spans,
    masked,
    secret_env_values,
    value_spans,
)
from perfgate.report.secret_patterns import find

# a results file's fields that hold identities (matched across files and linked): masked as in case ids only
_ID_FIELDS = frozenset({"case_id", "nodeid", "kernel", "group", "reference", "git_branch", "explanations"})


def scrub_foreign_text(text: str, environ: Mapping[str, str]) -> str:
    """Free text another job wrote (a Markdown summary, a finding's message): scrub_rendered's masks, and the
    value after a secret-named key (`password: ...`, `--token ...`), which only the writer's scrubber masked."""
    return _free_text(text, secret_env_values(environ))


def scrub_refusal(text: str, environ: Mapping[str, str]) -> str:
    """perfgate's own one-line refusal, which may quote a file another job wrote (a case id holding a token, a
    forged `password: ...`): scrub_rendered's masks and a secret-named key's value. Not `--flag value`: the
    line names perfgate's own flags (`--db-secret must be ...`)."""
    ids = id_values(secret_env_values(environ))
    return masked(text, value_spans(text, ids) + find(text) + key_value_spans(text))


def scrub_results_doc(doc: Any, environ: Mapping[str, str]) -> Any:
    """A results file as this job publishes it: every free text field as scrub_foreign_text masks it;
    identities and the case ids keying `explanations` as scrub_rendered masks them, so ids stay whole."""
    values = secret_env_values(environ)
    ids = id_values(values)

    def walk(value: Any, key: str) -> Any:
        if isinstance(value, str):
            return _identity(value, ids) if key in _ID_FIELDS else _free_text(value, values)
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if isinstance(value, dict):
            keyed = key in _ID_FIELDS  # explanations: {case id: [comparison, ...]}
            return {(_identity(k, ids) if keyed else k): walk(v, "" if keyed else k) for k, v in value.items()}
        return value

    return walk(doc, "")


def _identity(text: str, values: Iterable[str]) -> str:
    return masked(text, value_spans(text, values) + find(text))


def _free_text(text: str, values: Iterable[str]) -> str:
    return masked(text, value_spans(text, values) + find(text) + assignment_spans(text) + cut_token_spans(text))
