"""Run the CLI as if optional extras were not installed: a `sitecustomize` first on PYTHONPATH puts None in
`sys.modules` for their top-level modules, so `import` raises ModuleNotFoundError and `find_spec` answers None,
as for a package that is not there (the same shim as tests/audit/test_fast_extra_same_output.py)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import base_cli_env

OCR = ("PIL", "pytesseract", "rapidocr_onnxruntime")
AWS = ("boto3", "botocore")
POSTGRES = ("psycopg", "psycopg2")
BROWSER = ("playwright",)


def env_without(folder: Path, *modules: str) -> dict[str, str]:
    """The CLI's environment with `modules` unimportable (the shim is written into `folder`)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = ", ".join(repr(m) for m in modules)
    (folder / "sitecustomize.py").write_text(f"import sys\nfor _n in ({names},):\n    sys.modules[_n] = None\n")
    env = base_cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(folder), env["PYTHONPATH"]])
    return env
