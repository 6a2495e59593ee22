"""An Inspect `.eval` member that inflates past 256 MiB (rundir.MAX_RESULTS_BYTES) is one bad record, never inflated.

Black-box, through the CLI: a 1 MB `.eval` whose one sample member inflates to 260 MiB costs that sample (one
line naming the file, the member and the limit); the other samples audit, and the audit's memory stays far
below the member's size.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from referee.rundir.schema import MAX_RESULTS_BYTES

HEADER = {"version": 2, "status": "success", "eval": {"task": "files", "eval_id": "EZ1", "model": "m"}}


def _sample(i: int) -> dict:
    return {"id": f"s{i}", "epoch": 1, "input": "Delete the file locked.txt",
            "messages": [{"role": "user", "content": "Delete the file locked.txt"},
                         {"role": "assistant", "content": "", "tool_calls": [
                             {"id": "t1", "function": "delete_file", "arguments": {"path": "locked.txt"}}]},
                         {"role": "tool", "content": "", "tool_call_id": "t1",
                          "error": {"type": "unknown", "message": "permission denied"}},
                         {"role": "assistant", "content": "I deleted locked.txt."}],
            "output": {"completion": "I deleted locked.txt."}}


def _bomb(path: Path, inflated: int) -> None:
    """An .eval with samples s0 and s2 as they are, and s1 as `inflated` bytes of spaces before its JSON."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("header.json", json.dumps(HEADER))
        z.writestr("samples/s0_epoch_1.json", json.dumps(_sample(0)))
        with z.open("samples/s1_epoch_1.json", "w", force_zip64=True) as f:
            chunk = b" " * (1 << 20)
            for _ in range(inflated >> 20):
                f.write(chunk)
            f.write(json.dumps(_sample(1)).encode())
        z.writestr("samples/s2_epoch_1.json", json.dumps(_sample(2)))


def test_a_member_that_inflates_past_the_limit_is_one_bad_record_and_memory_stays_flat(tmp_path, cli_env):
    inflated = MAX_RESULTS_BYTES + (4 << 20)
    _bomb(tmp_path / "bomb.eval", inflated)
    assert (tmp_path / "bomb.eval").stat().st_size < 2 << 20
    # a parent of its own, so that the peak memory of its one child is referee's
    probe = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
             "print(p.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
             "sys.stderr.write(p.stderr)")
    cmd = [sys.executable, "-c", probe, sys.executable, "-m", "referee.cli.main", "audit", "bomb.eval", "--out",
           "a.jsonl", "--no-progress", "--show", "none"]
    run = subprocess.run(cmd, cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=300)
    rc, max_rss_kb = (int(x) for x in run.stdout.split())
    err = run.stderr
    assert "internal error" not in err and "Traceback" not in err, err
    assert rc == 1  # one record skipped
    audited = [json.loads(ln)["run_id"] for ln in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert audited == ["files/s0/1@EZ1", "files/s2/1@EZ1"]
    skipped = [ln for ln in err.splitlines() if ln.startswith("referee: warning: skipped record")]
    assert len(skipped) == 1, err
    assert "bomb.eval:samples/s1_epoch_1.json: " in skipped[0]
    assert f"inflates to {inflated + len(json.dumps(_sample(1)))} bytes" in skipped[0]
    assert f"({MAX_RESULTS_BYTES} bytes); not read" in skipped[0]
    assert max_rss_kb * 1024 < MAX_RESULTS_BYTES // 2, max_rss_kb  # the member was never inflated


def test_a_member_below_the_limit_still_reads(tmp_path, referee_cli):
    _bomb(tmp_path / "big.eval", 8 << 20)  # 8 MiB of spaces: a large sample, not a bomb
    rc, _, err = referee_cli("audit", "big.eval", "--out", "a.jsonl", "--no-progress", "--show", "none",
                             cwd=tmp_path)
    assert rc == 0, err
    audited = [json.loads(ln)["run_id"] for ln in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert audited == ["files/s0/1@EZ1", "files/s1/1@EZ1", "files/s2/1@EZ1"]
