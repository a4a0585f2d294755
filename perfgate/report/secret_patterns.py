"""Where the secrets are in a text: gitleaks' default rules (vendored, vendor/gitleaks_rules.json, MIT) plus a
few formats gitleaks has no rule for, and the name=value rule for free text.

Why a vendored table and not a library: gitleaks' rule set is the broadest maintained one (216 formats, each
with keywords to skip texts that cannot hold it and an entropy floor against placeholders), and it is data,
not code: a JSON table is read with the standard library. detect-secrets (Yelp) covers about 25 formats,
needs PyYAML and requests, and scans files line by line through global settings; trufflehog's detectors are
Go code (AGPL). scripts/vendor_secret_rules.py refreshes the table from gitleaks' config/gitleaks.toml and
translates its RE2 regexes into Python's dialect once, there.

Matching follows gitleaks (detect/detect.go): a rule is tried only when the lower-cased text holds one of its
keywords; the secret is the rule's `secret_group`, else the first non-empty group, else the whole match; a
secret whose Shannon entropy is at or below the rule's floor, that matches an allowlist regex or holds a
stopword is not one. Nothing is compiled at import: the table is read on the first scrub.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from importlib import resources

Span = tuple[int, int]


@dataclass(frozen=True)
class SecretRule:
    id: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...] = ()  # lower case; empty: always tried
    secret_group: int = 0
    entropy: float = 0.0  # a secret must have more (bits per character)
    allow: tuple[re.Pattern[str], ...] = ()
    stopwords: tuple[str, ...] = ()
    min_digits: int = 0  # for bare high-entropy formats: a random token of that length has digits


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


# Formats gitleaks has no rule for (checked against its table at b58d3f1). Each has a test of its own
# (tests/test_secret_formats.py).
_OWN: tuple[tuple[str, str, tuple[str, ...], float, int], ...] = (
    # (id, regex, keywords, entropy floor, min digits)
    ("discord-webhook-url", r"discord(?:app)?\.com/api/webhooks/\d+/([\w-]{20,})", ("discord",), 0.0, 0),
    ("dockerhub-access-token", r"\b(dckr_(?:pat|oat)_[\w-]{20,})", ("dckr_",), 0.0, 0),
    ("azure-sas-signature", r"[?&]sig=([A-Za-z0-9%+/=]{16,})", ("sig=",), 0.0, 0),
    ("azure-storage-account-key", r"(?i)AccountKey=([A-Za-z0-9+/]{40,}={0,2})", ("accountkey=",), 0.0, 0),
    # a bare AWS secret access key: 40 characters of base64's alphabet, random (a git hash is hex: <= 4 bits)
    ("aws-secret-access-key", r"(?<![\w/+=])([A-Za-z0-9/+]{40})(?![\w/+=])", (), 4.6, 2),
    # credentials in a URL: user:password@host
    ("url-credentials", r"\b[a-z][a-z0-9+.-]*://([^/\s:@]+:[^/\s@]+)@", ("://",), 0.0, 0),
    # an Authorization header's value; a word after "basic" or "bearer" in prose has no digit
    ("authorization-value", r"(?i)\b(?:bearer|basic)\s+([A-Za-z0-9._~+/=-]{8,})", ("bearer", "basic"), 3.0, 1),
    ("github-token", r"\b(gh[opusr]_[A-Za-z0-9]{20,})", ("gh",), 0.0, 0),
    ("openai-style-key", r"\b(sk-(?:[a-z]+-)?[A-Za-z0-9_-]{20,})", ("sk-",), 3.0, 0),
    # a private key block cut before its END line (a reason shortened to 200 characters): gitleaks wants the END
    (
        "private-key-cut",
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----([\s\S]+?)(?:-----END|$)",
        ("-----begin",),
        0.0,
        0,
    ),
    ("stripe-style-key", r"\b([sr]k[-_](?:live|test|proj)[-_][A-Za-z0-9_-]{8,})", ("k-", "k_"), 0.0, 0),
)


@functools.cache
def token_rules() -> tuple[SecretRule, ...]:
    """Rules for formats a token has on its own, wherever it appears (case ids included)."""
    table = json.loads(resources.files("perfgate.report").joinpath("vendor/gitleaks_rules.json").read_text())
    rules = [
        SecretRule(
            r["id"],
            re.compile(r["regex"]),
            tuple(r["keywords"]),
            r["secret_group"],
            r["entropy"],
            tuple(re.compile(a) for a in r["allow"]),
            tuple(r["stopwords"]),
        )
        for r in table["rules"]
    ]
    rules += [SecretRule(i, re.compile(rx), kw, entropy=e, min_digits=d) for i, rx, kw, e, d in _OWN]
    return tuple(rules)


@functools.cache
def placeholders() -> tuple[tuple[re.Pattern[str], ...], tuple[str, ...]]:
    """gitleaks' global allowlist: values that are no secret (`$VAR`, `${{ secrets.X }}`, true, paths)."""
    table = json.loads(resources.files("perfgate.report").joinpath("vendor/gitleaks_rules.json").read_text())
    return tuple(re.compile(a) for a in table["allow"]), tuple(table["stopwords"])


def is_placeholder(secret: str) -> bool:
    allow, stopwords = placeholders()
    lowered = secret.lower()
    return any(a.search(secret) for a in allow) or any(w in lowered for w in stopwords)


def _secret_span(rule: SecretRule, m: re.Match[str]) -> Span:
    if rule.secret_group:
        return m.span(rule.secret_group)
    for g in range(1, (m.re.groups or 0) + 1):
        if m.group(g):
            return m.span(g)
    return m.span()


def _is_secret(rule: SecretRule, secret: str) -> bool:
    if not secret or (rule.entropy and shannon_entropy(secret) <= rule.entropy):
        return False
    if rule.min_digits and sum(c.isdigit() for c in secret) < rule.min_digits:
        return False
    if rule.id == "aws-secret-access-key" and (secret.lower() == secret or secret.upper() == secret):
        return False  # random base64 has both cases; an all-lower or all-upper word run is no key
    lowered = secret.lower()
    if any(a.search(secret) for a in rule.allow) or any(w in lowered for w in rule.stopwords):
        return False
    return not is_placeholder(secret)


@functools.cache
def _keyword_index() -> tuple[tuple[str, ...], dict[str, tuple[int, ...]], tuple[int, ...]]:
    """Every keyword, the rules each calls for, and the rules without keywords (always tried). 241 `in`
    tests cost ~30 us a text; a regex alternation of the keywords tried at every position (so that
    overlapping keywords are all found) was 3x slower, and grouping them by first characters no faster."""
    rules = token_rules()
    keywords = tuple(sorted({k for r in rules for k in r.keywords}))
    calls = {k: tuple(i for i, r in enumerate(rules) if k in r.keywords) for k in keywords}
    return keywords, calls, tuple(i for i, r in enumerate(rules) if not r.keywords)


def find(text: str) -> list[Span]:
    """The spans of the secrets in `text` (token formats), merged where they overlap."""
    return list(_find(text))


@functools.lru_cache(maxsize=1 << 15)
def _find(text: str) -> tuple[Span, ...]:
    """`find`, remembered: a gate's terminal table and its outputs each scrub every case id once (two
    scrubbers), and the same note recurs across cases; the rules are fixed for the process."""
    rules = token_rules()
    keywords, calls, always = _keyword_index()
    lowered = text.lower()
    tried = set(always)
    for k in [k for k in keywords if k in lowered]:
        tried.update(calls[k])
    spans: list[Span] = []
    for i in sorted(tried):
        rule = rules[i]
        for m in rule.pattern.finditer(text):
            start, end = _secret_span(rule, m)
            if start >= 0 and _is_secret(rule, text[start:end]):
                spans.append((start, end))
    return tuple(merge(spans))


def merge(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out
