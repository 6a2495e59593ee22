"""`referee run a.yaml b.yaml -j N` and `--executor dask`: plans at once, each with its own run directory, app and
port, one combined summary and the worst exit code."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

from tests.conftest import run_cli
from tests.runner.runner_helpers import app_block, write_plan

# an agent that notes when it started and stopped acting (to see plans overlap), then claims pass
AGENT = ("import json, os, time; p = os.environ['REFEREE_AGENT_DIR']; t0 = time.time(); time.sleep(1.5); "
         "open(os.path.join(p, 'span'), 'w').write(f'{t0} {time.time()}'); "
         "open(os.environ['REFEREE_CLAIM_FILE'], 'w').write(json.dumps({'pass': True, 'note': 'done'}))")


def plans(tmp_path: Path, n: int, *, fail: int | None = None) -> list[str]:
    out = []
    for i in range(n):
        step = {"id": "check", "do": "look at the health page",
                "validators": [{"kind": "http_status_eq", "url": "/health", "expected": 404 if i == fail else 200}]}
        plan = {"name": f"plan-{i}", "app": app_block(tmp_path / f"app{i}.db"), "steps": [step]}
        out.append(str(write_plan(tmp_path / f"p{i}.yaml", plan)))
    return out


def agent() -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(AGENT)}"


def spans(runs: list[dict]) -> list[tuple[float, float]]:
    got = []
    for r in runs:
        a, b = (Path(r["run_dir"]) / "agent" / "check" / "span").read_text().split()
        got.append((float(a), float(b)))
    return got


def ports(runs: list[dict]) -> set[str]:
    """The app port each run's runner captured from (read in its own evidence files)."""
    got = set()
    for r in runs:
        text = " ".join(f.read_text() for f in Path(r["run_dir"], "evidence").rglob("*.json"))
        found = set(re.findall(r"127\.0\.0\.1:(\d+)", text))
        assert len(found) == 1, found
        got |= found
    return got


def test_plans_run_at_once_each_with_its_own_run_directory_app_and_port(tmp_path, cli_env):
    ps = plans(tmp_path, 3, fail=1)
    rc, out, err = run_cli(["run", *ps, "-j", "3", "--agent", agent(), "--out", str(tmp_path / "runs"), "--json"],
                           cwd=tmp_path, env=cli_env, timeout=120)
    assert rc == 1, err  # the worst plan's code: plan-1 expects a 404 from a page that answers 200
    runs = json.loads(out)["runs"]
    assert [r["plan"] for r in runs] == ["plan-0", "plan-1", "plan-2"]  # in the order given
    assert len({r["run_dir"] for r in runs}) == 3 and all(Path(r["run_dir"], "results.json").exists() for r in runs)
    assert len(ports(runs)) == 3                      # three apps, three ports
    (a0, b0), (a1, b1), (a2, b2) = spans(runs)
    assert max(a0, a1, a2) < min(b0, b1, b2)          # all three agents were acting at the same moment
    assert [r["summary"]["PASS"] for r in runs] == [1, 0, 1] and runs[1]["summary"]["FAIL"] == 1
    assert "plans: 3; PASS 2 FAIL 1" in err and "exit 1" in err
    assert err.count("== ") == 3                      # each plan's own output, once, as one block


def test_minus_j_one_is_the_plain_sequential_run(tmp_path, cli_env):
    ps = plans(tmp_path, 2)
    rc, out, err = run_cli(["run", *ps, "-j", "1", "--agent", "true", "--out", str(tmp_path / "runs"), "--json"],
                           cwd=tmp_path, env=cli_env, timeout=120)
    assert rc == 0, err
    assert [r["plan"] for r in json.loads(out)["runs"]] == ["plan-0", "plan-1"] and "plans: " not in err


def test_a_bad_plan_stops_everything_before_anything_runs(tmp_path, cli_env):
    ps = plans(tmp_path, 2)
    bad = write_plan(tmp_path / "bad.yaml", {"steps": [{"id": "x", "do": "y", "validators": [{"kind": "nope"}]}]})
    rc, out, err = run_cli(["run", *ps, str(bad), "-j", "2", "--agent", "true", "--out", str(tmp_path / "runs")],
                           cwd=tmp_path, env=cli_env, timeout=60)
    assert rc == 2 and "nope" in err and not (tmp_path / "runs").exists()


def test_plans_on_a_dask_cluster(tmp_path, cli_env):
    from distributed import LocalCluster

    ps = plans(tmp_path, 2, fail=0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        rc, out, err = run_cli(["run", *ps, "--executor", "dask", "--scheduler", cluster.scheduler_address,
                                "--agent", agent(), "--out", str(tmp_path / "runs"), "--json"],
                               cwd=tmp_path, env=cli_env, timeout=120)
    assert rc == 1, err
    runs = json.loads(out)["runs"]
    assert [r["plan"] for r in runs] == ["plan-0", "plan-1"] and len(ports(runs)) == 2
    assert [r["summary"]["FAIL"] for r in runs] == [1, 0]
    (a0, b0), (a1, b1) = spans(runs)
    assert max(a0, a1) < min(b0, b1)  # the two workers ran them at once
    assert "dask (tcp://127.0.0.1:" in err
