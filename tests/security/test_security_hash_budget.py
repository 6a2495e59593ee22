"""Issue 29, hole 4: what the agent leaves is hashed within a budget. Sparse files (`truncate -s 512M`: no data,
no disk) are refused by their allocated size; files past the step's or the run's byte budget (settable in the
plan) are not taken; both are listed in the step record with the reason, a validator that cites one is ERROR
saying why, and `referee grade` never reads them. The step record keeps the agent's own time apart from the
runner's capture and hashing time.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.security.isolation_modes import MODES, leaky_cmd


def _manifest(run_dir) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


@pytest.mark.parametrize("mode", MODES)
def test_sparse_files_are_not_taken_a_validator_citing_one_errors_and_grade_never_reads_them(sec, mode):
    plan = {"name": "sparse", "actor": {"isolation": mode},
            "steps": [{"id": "fill", "do": "SPARSE 8 512",
                       "validators": [{"kind": "text_contains", "evidence": "sparse3.bin", "text": "x"}]}]}
    r = sec.run(plan, agent=leaky_cmd(sec.base), timeout=110)
    assert not r.hung, r.hang_message()
    step = r.step("fill")
    assert step["verdict"] == "ERROR", r.explain()
    reason = json.dumps(step)
    assert "sparse3.bin" in reason and "not taken" in reason and "sparse" in reason, reason[:2000]
    m = _manifest(r.run_dir)
    rec = m["steps"]["fill"]
    not_taken = {n["path"]: n["reason"] for n in rec["not_taken"]}
    assert set(not_taken) == {f"agent/fill/sparse{i}.bin" for i in range(8)}, rec
    assert all("sparse" in why for why in not_taken.values()), not_taken
    assert not [f for f in m["files"] if "sparse" in f["path"]], "a sparse file was taken as evidence"
    # the agent's own time and the runner's are apart (recorded; their values are not judged here)
    assert isinstance(rec["agent_s"], (int, float)) and isinstance(rec["runner_s"], (int, float)), rec
    # grade reads none of them: under relatime a read after the file's mtime moves its atime
    files = [r.run_dir / "agent" / "fill" / f"sparse{i}.bin" for i in range(8)]
    for p in files:
        st = os.stat(p)
        os.utime(p, ns=(0, st.st_mtime_ns))
    rc, out, err, _dt = sec.cli("grade", r.run_dir)
    assert rc == 1, f"rc={rc} {out[-1000:]} {err[-1000:]}"
    read = [p.name for p in files if os.stat(p).st_atime_ns != 0]
    assert read == [], f"`referee grade` read the files it had refused: {read}"
    with open(files[0], "rb") as fh:  # the control: a read does move the atime here (else the check above is void)
        fh.read(1)
    assert os.stat(files[0]).st_atime_ns != 0, "this file system does not record reads (noatime); the check is void"


# (plan's evidence budget, each step's order and the file its validator cites, files not taken per step)
BUDGETS = [
    pytest.param({"max_step_mb": 1}, [("FILL 3 600", "fill1.bin")], [2], "step", id="per-step"),
    pytest.param({"max_run_mb": 1}, [("FILL 1 600", "fill0.bin"), ("FILL 1 600", "fill0.bin")], [0, 1], "run",
                 id="per-run"),
]


@pytest.mark.parametrize("budget,steps,refused,which", BUDGETS)
def test_files_past_the_hashing_budget_are_listed_as_not_taken(sec, budget, steps, refused, which):
    plan = {"name": "budget", "evidence": budget,
            "steps": [{"id": f"s{i}", "do": order,
                       "validators": [{"kind": "text_contains", "evidence": cited, "text": "never-there"}]}
                      for i, (order, cited) in enumerate(steps)]}
    r = sec.run(plan, agent=leaky_cmd(sec.base))
    assert not r.hung, r.hang_message()
    m = _manifest(r.run_dir)
    for i, n in enumerate(refused):
        sid = f"s{i}"
        left = m["steps"][sid].get("not_taken") or []
        assert len(left) == n, (sid, left)
        assert all(f"{which}'s hashing budget" in x["reason"] for x in left), left
        taken = [f for f in m["files"] if f["step"] == sid and f["kind"] == "agent_file"]
        assert len(taken) == int(steps[i][0].split()[1]) - n, (sid, taken)
        # a validator citing a file not taken is ERROR (the grader could not look), one citing a taken file FAILs
        assert r.verdict(sid) == ("ERROR" if n else "FAIL"), r.explain()
