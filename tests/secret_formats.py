"""Fake secrets in the formats CI jobs hold, made from a fixed seed (none is a real credential): what
tests/test_secret_formats.py runs through the scrubber and through every output perfgate publishes.

Each is (name, token): the token alone, as it would appear in a parametrize id, a skip reason or a
profiler's stderr. The formats: every one issue 32 names as passing the first scrubber (PyPI, Hugging Face,
JWT, GitLab, npm, Google API keys, Slack app tokens and webhooks, Discord webhooks, SendGrid, Twilio, Docker
Hub, Vault, Grafana, Shopify, bare AWS secret keys, Azure SAS), the ones it caught, and more from gitleaks'
table: 40 in all, 27 of which the first scrubber let through.
"""

from __future__ import annotations

import base64
import json
import random
import string

_RNG = random.Random(32)
ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"


def _r(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _jwt() -> str:
    def part(doc: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    header = part({"alg": "HS256", "typ": "JWT"})
    body = part({"sub": _r(LOWER_ALNUM, 12), "iat": 1700000000, "name": "ci-runner"})
    return f"{header}.{body}.{_r(ALNUM + '_-', 43)}"


def _pem() -> str:
    lines = "\n".join(_r(B64, 64) for _ in range(4))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{lines}\n-----END RSA PRIVATE KEY-----"


FORMATS: tuple[tuple[str, str], ...] = (
    ("github-pat", "ghp_" + _r(ALNUM, 36)),
    ("github-oauth", "gho_" + _r(ALNUM, 36)),
    ("github-app", "ghs_" + _r(ALNUM, 36)),
    ("github-fine-grained-pat", "github_pat_" + _r(ALNUM, 22) + "_" + _r(ALNUM, 59)),
    ("gitlab-pat", "glpat-" + _r(ALNUM, 20)),
    ("gitlab-runner", "glrt-" + _r(ALNUM, 20)),
    ("pypi", "pypi-AgEIcHlwaS5vcmc" + _r(ALNUM + "_-", 70)),
    ("huggingface", "hf_" + _r(string.ascii_letters, 34)),
    ("jwt", _jwt()),
    ("npm", "npm_" + _r(ALNUM, 36)),
    ("google-api-key", "AIza" + _r(ALNUM + "_-", 35)),
    ("slack-app", "xapp-1-A0" + _r(UPPER_DIGITS, 9) + "-" + _r(string.digits, 13) + "-" + _r(HEX, 64)),
    ("slack-bot", "xoxb-" + _r(string.digits, 12) + "-" + _r(string.digits, 13) + "-" + _r(ALNUM, 24)),
    ("slack-user", "xoxp-" + "-".join(_r(string.digits, 12) for _ in range(3)) + "-" + _r(HEX, 32)),
    ("slack-webhook", f"https://hooks.slack.com/services/T0{_r(ALNUM, 9)}/B0{_r(ALNUM, 9)}/{_r(ALNUM, 24)}"),
    ("discord-webhook", "https://discord.com/api/webhooks/" + _r(string.digits, 18) + "/" + _r(ALNUM + "_-", 68)),
    ("sendgrid", "SG." + _r(ALNUM, 22) + "." + _r(ALNUM, 43)),
    ("twilio", "SK" + _r(HEX, 32)),
    ("dockerhub", "dckr_pat_" + _r(ALNUM + "_-", 27)),
    ("vault", "hvs." + _r(ALNUM + "_-", 95)),
    ("grafana-service-account", "glsa_" + _r(ALNUM, 32) + "_" + _r(HEX, 8)),
    ("grafana-cloud", "glc_" + _r(ALNUM, 60)),
    ("shopify", "shpat_" + _r(HEX, 32)),
    ("aws-access-key-id", "AKIA" + _r(string.ascii_uppercase + "234567", 16)),
    ("aws-secret-access-key", _r(ALNUM, 19) + "/" + _r(ALNUM, 10) + "+" + _r(ALNUM, 9)),
    ("azure-sas", f"https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2030-01-01&sp=r&sig={_r(ALNUM, 40)}%3D"),
    ("stripe-live", "sk_live_" + _r(ALNUM, 24)),
    ("openai-project", "sk-proj-" + _r(ALNUM + "_-", 74) + "T3BlbkFJ" + _r(ALNUM + "_-", 74)),
    ("anthropic", "sk-ant-api03-" + _r(ALNUM + "_-", 93) + "AA"),
    ("private-key", _pem()),
    ("url-credentials", "postgresql://ci:" + _r(ALNUM, 16) + "@db.internal:5432/perf"),
    ("bearer-header", "Authorization: Bearer " + _r(ALNUM, 20) + "." + _r(ALNUM, 12)),
    ("databricks", "dapi" + _r(HEX, 32)),
    ("digitalocean", "dop_v1_" + _r(HEX, 64)),
    ("pulumi", "pul-" + _r(HEX, 40)),
    ("linear", "lin_api_" + _r(LOWER_ALNUM, 40)),
    ("doppler", "dp.pt." + _r(LOWER_ALNUM, 43)),
    ("postman", "PMAK-" + _r(HEX, 24) + "-" + _r(HEX, 34)),
    ("rubygems", "rubygems_" + _r(HEX, 48)),
    ("age", "AGE-SECRET-KEY-1" + _r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
)

# the part of each token that must never be published (a URL's host or an id before the secret may stay)
_SECRET_PART = {
    "slack-webhook": lambda t: t.rsplit("/", 1)[1],
    "discord-webhook": lambda t: t.rsplit("/", 1)[1],
    "azure-sas": lambda t: t.split("sig=", 1)[1],
    "url-credentials": lambda t: t.split(":")[2].split("@")[0],
    "bearer-header": lambda t: t.rsplit(" ", 1)[1],
    "private-key": lambda t: t.splitlines()[2],
}


def secret_part(name: str, token: str) -> str:
    return _SECRET_PART.get(name, lambda t: t)(token)
