"""Regenerate docs/images/ (the chart gallery) from data recorded on the H100. No GPU needed.

    python scripts/gallery.py [--out docs/images]

Inputs (docs/evidence/data/h100/gallery/, recorded in GPU session A2, lab/gpu/session_a2.sh):
- history.db.gz: the calibration processes, a gate, a de-tuned gate (run 8) and a profiled gate (run 9),
  samples kept for runs 8 and 9 only;
- baseline.json: the calibrated baseline those runs were gated against;
- perfgate-ncu.ncu-rep.gz: the profiled gate's Nsight Compute report;
- tests/data/h100/perfgate-nsys.sqlite: an Nsight Systems export of the bundled suite.
Every chart goes through perfgate's own commands (`perfgate compare --report-dir`, `perfgate analyze
--output-dir`), so the gallery shows exactly what users get.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "docs" / "evidence" / "data" / "h100" / "gallery"
NSYS_EXPORT = ROOT / "tests" / "data" / "h100" / "perfgate-nsys.sqlite"


def gunzip(src: Path, dst: Path) -> Path:
    with gzip.open(src) as fin, dst.open("wb") as fout:
        shutil.copyfileobj(fin, fout)
    return dst


def cli(*argv: str) -> None:
    from perfgate.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    if code not in (0, 1):  # 1: the de-tuned run fails its gate, as it should
        raise SystemExit(f"perfgate {' '.join(argv)}: exit {code}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perfgate-gallery-") as tmp:
        t = Path(tmp)
        db = gunzip(DATA / "history.db.gz", t / "history.db")
        ncu = gunzip(DATA / "perfgate-ncu.ncu-rep.gz", t / "perfgate-ncu.ncu-rep")
        baseline = str(DATA / "baseline.json")
        for run, name in ((8, "gate-detuned"), (9, "gate-profiled")):
            cli(
                "compare",
                "--db",
                str(db),
                "--run",
                str(run),
                "--baseline-file",
                baseline,
                "--report-dir",
                str(t / name),
            )
        cli("analyze", str(NSYS_EXPORT), str(ncu), "--output-dir", str(t / "analyze"))
        args.out.mkdir(parents=True, exist_ok=True)
        for old in args.out.glob("*.png"):
            old.unlink()
        for folder in ("gate-detuned", "gate-profiled", "analyze"):
            for png in sorted((t / folder).glob("*.png")):
                shutil.copyfile(png, args.out / f"{folder}_{png.name}")
    for png in sorted(args.out.glob("*.png")):
        print(png.relative_to(ROOT) if png.is_relative_to(ROOT) else png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
