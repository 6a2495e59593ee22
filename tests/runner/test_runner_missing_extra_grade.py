"""A validator whose extra is not installed where a run is graded is ERROR "needs the X extra: ... install with
...", not a crash."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.support.noextras import OCR, env_without

AGENT = "import os; open(os.path.join(os.environ['REFEREE_AGENT_DIR'], 'out.txt'), 'w').write('hello')\n"


def test_an_ocr_validator_without_the_extra_is_error_naming_the_extra(tmp_path):
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "plan.yaml").write_text(
        "name: ocr\nactor: {kind: command, command: 'python3 agent.py'}\nsteps:\n  - id: s\n    do: x\n"
        "    validators: [{kind: ocr_contains, evidence: [out.txt], text: hello}]\n")
    # run where the extra is installed; grade again where it is not (a run directory handed on): `run` itself
    # refuses such a plan before it starts (test_runner_missing_extra_preflight.py)
    rc, out, err = run_cli(["run", "plan.yaml", "--out", "runs"], cwd=tmp_path, env=env_without(tmp_path / "all"))
    assert rc in (0, 1), err
    rc, out, err = run_cli(["grade", "runs/ocr", "--json"], cwd=tmp_path, env=env_without(tmp_path / "shim", *OCR))
    assert rc == 1, err
    step = json.loads(out)["runs"][0]["steps"][0]
    assert step["verdict"] == "ERROR", step
    reason = step["validators"][0]["reason"]
    assert reason.startswith("needs the ocr extra: PIL is not installed; install with: pip install 'referee[ocr]'")
    assert "crashed" not in reason, reason
