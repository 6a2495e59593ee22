"""A validator whose extra is not installed is ERROR "needs the X extra: ... install with ...", not a crash."""

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
    rc, out, err = run_cli(["run", "plan.yaml", "--out", "runs", "--json"], cwd=tmp_path,
                           env=env_without(tmp_path / "shim", *OCR))
    assert rc == 1, err
    step = json.loads(out)["runs"][0]["steps"][0]
    assert step["verdict"] == "ERROR", step
    reason = step["validators"][0]["reason"]
    assert reason.startswith("needs the ocr extra: PIL is not installed; install with: pip install 'referee[ocr]'")
    assert "crashed" not in reason, reason
