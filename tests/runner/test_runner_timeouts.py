"""Every timeout a plan can give is a number of seconds above 0 and at most a day: anything else is a one-line
plan error at its line from `referee check` (and so before `referee run` starts anything)."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli

# each place a plan gives a timeout, as a plan whose line 2 holds it ({t} is the value)
PLACES = {
    "actor.timeout_s": "steps: [{{id: a, do: x}}]\nactor: {{kind: command, command: 'true', timeout_s: {t}}}\n",
    "app.ready_timeout_s": "steps: [{{id: a, do: x}}]\napp: {{start: 'true', url: 'http://127.0.0.1:{{port}}', "
                           "ready_timeout_s: {t}}}\n",
    "step timeout_s": "steps:\n  - {{id: a, do: x, timeout_s: {t}}}\n",
    "http capture": "steps:\n  - {{id: a, do: x, capture: [{{kind: http, name: h, url: 'http://127.0.0.1:9/', "
                    "timeout_s: {t}}}]}}\n",
    "command capture": "steps:\n  - {{id: a, do: x, capture: [{{kind: command, name: c, command: 'true', "
                       "timeout_s: {t}}}]}}\n",
    "command_exit_code": "steps:\n  - {{id: a, do: x, validators: [{{kind: command_exit_code, command: 'true', "
                         "timeout_s: {t}}}]}}\n",
    "script action": "steps:\n  - {{id: a, script: [{{wait_for: {{text: hi, timeout_s: {t}}}}}]}}\n"
                     "actor: {{kind: browser}}\n",
}


BAD = ["0", "-1", ".nan", ".inf", "-.inf", "1e308", "86401"]


@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_timeout_out_of_range_is_a_plan_error_at_its_line(tmp_path, cli_env, place):
    plans = []
    for i, value in enumerate(BAD):
        plans.append(tmp_path / f"plan{i}.yaml")
        plans[-1].write_text(PLACES[place].format(t=value))
    rc, out, err = run_cli(["check", *plans], cwd=tmp_path, env=cli_env, timeout=60)
    assert rc == 2 and "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == len(BAD), err  # one line per plan
    for i, (value, line) in enumerate(zip(BAD, lines)):
        assert line.startswith("referee: error: ") and f"plan{i}.yaml:2:" in line, (value, line)
        assert "timeout must be a number of seconds above 0 and at most 86400 (a day)" in line, (value, line)


@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_timeout_in_range_loads(tmp_path, cli_env, place):
    for value in ("0.25", "86400"):
        plan = tmp_path / "plan.yaml"
        plan.write_text(PLACES[place].format(t=value))
        rc, out, err = run_cli(["check", str(plan)], cwd=tmp_path, env=cli_env, timeout=60)
        assert rc == 0, f"{place}={value}: {out}{err}"


def test_the_plan_schema_tells_editors_the_range(tmp_path, cli_env):
    import json

    rc, out, err = run_cli(["schema", "plan"], cwd=tmp_path, env=cli_env, timeout=60)
    assert rc == 0, err
    actor = json.loads(out)["$defs"]["ActorSpec"]["properties"]["timeout_s"]
    assert actor["exclusiveMinimum"] == 0 and actor["maximum"] == 86400
