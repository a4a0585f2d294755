"""Regenerate the dashboard's screenshots in docs/images/ from the browser tests (issue 29: the new views shown).

    python scripts/dashboard_screenshots.py [--out docs/images]

Runs tests/test_site_browser.py and tests/test_site_views_browser.py (headless Chromium; Debian's package and
Playwright, as .ci/run installs them) with PERFGATE_SCREENSHOT_DIR pointing at a scratch directory, then writes
each PNG into --out with its colours reduced to a palette (Pillow, a matplotlib dependency): the committed
images stay small. Exit status: the tests' (no image is replaced when a test failed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ("tests/test_site_browser.py", "tests/test_site_views_browser.py")
TIMEOUT_S = 900


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perfgate-shots-") as scratch:
        env = dict(os.environ, PERFGATE_SCREENSHOT_DIR=scratch)
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *TESTS]
        done = subprocess.run(argv, cwd=ROOT, env=env, timeout=TIMEOUT_S, check=False)
        if done.returncode != 0:
            print("dashboard_screenshots: the browser tests failed; no image replaced", file=sys.stderr)
            return done.returncode
        shots = sorted(Path(scratch).glob("*.png"))
        if not shots:
            print("dashboard_screenshots: no screenshot taken (the browser tests skipped?)", file=sys.stderr)
            return 1
        args.out.mkdir(parents=True, exist_ok=True)
        for shot in shots:
            target = args.out / shot.name
            _small_png(shot, target)
            print(f"{target}: {target.stat().st_size:,} bytes")
    return 0


def _small_png(source: Path, target: Path) -> None:
    from PIL import Image

    with Image.open(source) as image:
        image.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)


if __name__ == "__main__":
    raise SystemExit(main())
