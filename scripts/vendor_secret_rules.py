"""Vendor gitleaks' default rules as the scrubber's pattern table (perfgate/report/vendor/gitleaks_rules.json).

    python scripts/vendor_secret_rules.py GITLEAKS_TOML COMMIT

GITLEAKS_TOML is gitleaks' config/gitleaks.toml (MIT, https://github.com/gitleaks/gitleaks) at COMMIT.
The rules are Go RE2 regexes; they are rewritten once here into Python's dialect (a `(?i)` that is not at
the start scopes the rest of its group, `\\z` is `\\Z`, POSIX classes such as `[[:alnum:]]` are spelled
out), and each is compiled, so a rule that cannot be translated stops the script instead of matching
something else at run time. Left out: `generic-api-key` (any `key = <word>` pair: it would mask
identifiers; the scrubber's own name=value rule is narrower) and the rules that only apply to file paths
or whole files (pkcs12-file, kubernetes-secret-yaml, nuget and Terraform config, freemius). Allowlists
are kept where they judge the secret itself (not a path or the whole line). A token's end is widened
from source code's (whitespace, a quote, `;`) to what ends one in a case id, JSON or a URL (`]`, `)`, `,`,
`}`, `>`, `|`, `&`).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import tomllib

OUT = Path(__file__).resolve().parents[1] / "perfgate" / "report" / "vendor" / "gitleaks_rules.json"
LEFT_OUT = {"generic-api-key"}
# gitleaks ends most rules where a secret ends in source code (whitespace, a quote, `;`, a literal \\n);
# perfgate scrubs case ids, JSON and messages too, where a token ends at `]`, `)`, `,`, `}`, `>`, `|` or
# `&` (`test_x[hf_...]`, `?sig=...&se=...`): the same boundary, widened by those
GITLEAKS_END = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
PERFGATE_END = r"""(?:[\x60'"\s;,)\]}>|&]|\\[nr]|$)"""
POSIX = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "xdigit": "0-9A-Fa-f",
    "space": r"\s",
    "word": r"\w",
    "punct": r"!-/:-@\[-`{-~",
}


def _scan(regex: str, start: int) -> tuple[list[int], int]:
    """From `start` inside a group: the positions of that group's top-level `|`, and of its closing `)`
    (len(regex) at the top level)."""
    bars: list[int] = []
    depth, i, in_class = 0, start, False
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if regex[i + 1 : i + 2] == "^":
                i += 1
            if regex[i + 1 : i + 2] == "]":  # a literal ] first in a class
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return bars, i
            depth -= 1
        elif c == "|" and depth == 0:
            bars.append(i)
        i += 1
    return bars, len(regex)


def to_python(regex: str) -> str:
    """RE2 -> Python `re`: scoped inline flags, \\z, POSIX classes. In RE2 a `(?i)` inside a group holds to
    the group's end, later alternatives included: each piece between its `|` gets its own `(?i:...)`."""
    for name, chars in POSIX.items():
        regex = regex.replace(f"[:{name}:]", chars)
    regex = regex.replace(r"\z", r"\Z").replace(GITLEAKS_END, PERFGATE_END)
    while True:
        at = regex.find("(?i)", 1)
        if at == -1:
            return regex
        bars, end = _scan(regex, at + 4)
        cuts = [at + 4, *(b + 1 for b in bars)]
        stops = [*bars, end]
        pieces = ["(?i:" + regex[a:b] + ")" for a, b in zip(cuts, stops)]
        regex = regex[:at] + "|".join(pieces) + regex[end:]


def _allow(rule: dict) -> tuple[list[str], list[str]]:
    regexes: list[str] = []
    stopwords: list[str] = []
    for allow in rule.get("allowlists", []):
        if allow.get("paths") or allow.get("regexTarget", "secret") != "secret":
            continue
        regexes += [to_python(r) for r in allow.get("regexes", [])]
        stopwords += allow.get("stopwords", [])
    return regexes, stopwords


def vendor(config: dict, commit: str) -> dict:
    rules = []
    for rule in config["rules"]:
        if rule["id"] in LEFT_OUT or "regex" not in rule or "path" in rule:
            continue
        regex = to_python(rule["regex"])
        re.compile(regex)
        allow, stopwords = _allow(rule)
        for r in allow:
            re.compile(r)
        rules.append(
            {
                "id": rule["id"],
                "regex": regex,
                "secret_group": rule.get("secretGroup", 0),
                "entropy": rule.get("entropy", 0.0),
                "keywords": [k.lower() for k in rule.get("keywords", [])],
                "allow": allow,
                "stopwords": stopwords,
            }
        )
    glob = config.get("allowlist", {})
    allow = [to_python(r) for r in glob.get("regexes", [])]
    for r in allow:
        re.compile(r)
    return {
        "source": f"https://github.com/gitleaks/gitleaks/blob/{commit}/config/gitleaks.toml",
        "license": "MIT (LICENSE-gitleaks.txt)",
        "rules": rules,
        "allow": allow,
        "stopwords": glob.get("stopwords", []),
    }


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    config = tomllib.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    table = vendor(config, sys.argv[2])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(table, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(table['rules'])} rules from {table['source']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
