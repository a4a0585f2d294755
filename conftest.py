"""Repository-root conftest: makes `kernels` importable from the root for the kernel suite's tests.

The perfgate plugin itself is registered through the `pytest11` entry point (pip install -e .).
"""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
