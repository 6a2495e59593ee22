"""A regrade's folder, written whole or not at all: RUN/regrades/<stamp>-<plan sha8>/ with its outputs and seal."""

from __future__ import annotations

import html
import os
import shutil
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from referee.core.fsutil import atomic_write_bytes
from referee.grader.regrade import REGRADES, SEAL_FILE, RegradeResults, sign_regrade
from referee.report.html import render_report
from referee.report.junit import junit_xml
from referee.report.outputs import agent_outputs
from referee.rundir.keys import SigningKey

__all__ = ["plans_line", "write_regrade"]


def plans_line(results: RegradeResults) -> str:
    """One line naming both plans, as the console, report.html and junit.xml show it.

    >>> from referee.grader.regrade import RegradeInfo
    >>> i = RegradeInfo(run="20261203T030000Z", run_plan_sha256="a" * 64, plan_sha256="b" * 64, plan_file="fixed.yaml")
    >>> for part in plans_line(RegradeResults(plan="p", steps=[], summary={}, regrade=i)).split(" over "): print(part)
    re-graded with fixed.yaml (plan sha256 bbbbbbbbbbbb...)
    run 20261203T030000Z (its plan sha256 aaaaaaaaaaaa...)
    """
    r = results.regrade
    return (f"re-graded with {r.plan_file} (plan sha256 {r.plan_sha256[:12]}...) over run {r.run} "
            f"(its plan sha256 {r.run_plan_sha256[:12]}...)")


def _report(run_dir: Path, results: RegradeResults) -> bytes:
    """The run's report layout (its screens, its agent output) from these results, with both plans named on top."""
    page = render_report(run_dir, results)
    r = results.regrade
    banner = (f'<div class="seal seal-unverified"><b>REGRADE</b>: {html.escape(plans_line(results))}; '
              f"corrected plan sha256 {html.escape(r.plan_sha256)}, the run's plan sha256 "
              f"{html.escape(r.run_plan_sha256)}. The run's own report is ../../report.html.</div>")
    head, sep, rest = page.partition("</h1>")
    return (head + sep + banner + rest).encode()


def _junit(run_dir: Path, results: RegradeResults) -> bytes:
    from referee.errors import RefereeError
    from referee.rundir.schema import read_manifest

    try:
        isolation = read_manifest(run_dir).isolation
    except RefereeError:
        isolation = None
    root = ET.fromstring(junit_xml(results, isolation, agent_outputs(run_dir, results)))  # our own bytes
    props = root.find("properties") if root.tag == "testsuite" else root.find("testsuite/properties")
    if props is not None:
        r = results.regrade
        for name, value in (("referee.regrade.plan_sha256", r.plan_sha256),
                            ("referee.regrade.run_plan_sha256", r.run_plan_sha256),
                            ("referee.regrade.run", r.run)):
            ET.SubElement(props, "property", name=name, value=value)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def write_regrade(run_dir: Path, results: RegradeResults, plan_bytes: bytes, key: SigningKey, stamp: str) -> Path:
    """Write the regrade folder beside the run's own outputs (which stay as they were) and seal it with `key`;
    built in a hidden folder and renamed into place, so a folder there is always whole. Returns its path."""
    base = Path(run_dir) / REGRADES
    base.mkdir(exist_ok=True)
    files = {
        "plan.yaml": plan_bytes,
        "regrade.json": results.regrade.model_dump_json(indent=2).encode() + b"\n",
        "results.json": results.model_dump_json(indent=2).encode() + b"\n",
        "junit.xml": _junit(Path(run_dir), results),
        "report.html": _report(Path(run_dir), results),
    }
    seal = sign_regrade(results.regrade, files, key)
    tmp = Path(tempfile.mkdtemp(prefix=".regrade-", dir=base))
    try:
        for name, data in files.items():
            atomic_write_bytes(tmp / name, data)
        atomic_write_bytes(tmp / SEAL_FILE, seal.model_dump_json(indent=2).encode() + b"\n")
        os.chmod(tmp, 0o755 & ~_umask())
        name = f"{stamp}-{results.regrade.plan_sha256[:8]}"
        for n in range(1, 1000):
            dest = base / (name if n == 1 else f"{name}-{n}")
            try:
                os.rename(tmp, dest)  # an empty folder of that name would be replaced: none is made there
            except OSError:
                continue
            if dest.is_dir():
                return dest
        raise OSError(f"no free folder name for {name} in {base}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
