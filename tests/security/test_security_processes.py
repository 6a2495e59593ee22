"""Nothing an agent leaves behind hangs the runner: a SIGTERM-ignoring agent behind `sh`, a
grandchild that holds stdout, a claim file made a FIFO, an earlier step's evidence replaced by a FIFO.

Each run gets a hard deadline; a run killed at it is a hang and fails the test.
"""

from __future__ import annotations

import json
import shlex

from tests.security.sec_helpers import AGENT_PY, wait_gone

DONE = "REAL-WORK-DONE"
VERDICTS = {"PASS", "FAIL", "SKIPPED", "ERROR"}


def _done_validator() -> list[dict]:
    return [{"kind": "text_contains", "evidence": "result.txt", "text": DONE}]


def test_agent_behind_sh_ignoring_sigterm_is_stopped_at_its_timeout(sec):
    inner = " ".join(shlex.quote(x) for x in (AGENT_PY, str(sec.base / "agents" / "hostile.py"), str(sec.out)))
    script = "trap '' TERM; " + inner + "; echo agent-exited"
    command = "sh -c " + shlex.quote(script)
    plan = {"name": "ignore-term", "actor": {"kind": "command", "command": command, "timeout_s": 3},
            "steps": [{"id": "stubborn", "do": f"SAVE result.txt {DONE}\nIGNORE_TERM {sec.token} 300",
                       "validators": _done_validator()}]}
    r = sec.run(plan, agent=None, timeout=30)
    assert not r.hung, r.hang_message()
    # stopped by its timeout, killed (SIGTERM is ignored), not waited for: the sleeper asks for 300 s
    agent = r.step("stubborn")["agent"]
    assert agent["timed_out"] and agent["timeout_s"] == 3, r.explain()
    assert agent["agent_s"] < 60, f"timeout_s: 3, but the runner waited {agent['agent_s']} s for the agent"
    record = json.loads((r.run_dir / "manifest.json").read_text())["steps"]["stubborn"]
    assert record["actor_killed"] >= 1, record
    alive = wait_gone(sec.token, timeout=3)
    assert not alive, f"the SIGTERM-ignoring agent still runs after the run: pids {alive}"
    assert r.verdict("stubborn") in VERDICTS and r.rc in (0, 1), r.explain()


def test_grandchild_holding_stdout_open_does_not_hang_the_step(sec):
    plan = {"name": "hold-stdout", "actor": {"kind": "command", "command": sec.agent, "timeout_s": 5},
            "steps": [{"id": "leaver", "do": f"SAVE result.txt {DONE}\nHOLD_STDOUT {sec.token} 300",
                       "validators": _done_validator()},
                      {"id": "next", "do": f"SAVE result.txt {DONE}", "validators": _done_validator()}]}
    r = sec.run(plan, timeout=30)
    assert not r.hung, r.hang_message()
    # the step ended when the agent exited, not at its timeout waiting for the pipe's end
    assert not r.step("leaver")["agent"]["timed_out"], r.explain()
    alive = wait_gone(sec.token, timeout=3)
    assert not alive, f"the grandchild holding stdout still runs after the run: pids {alive}"
    assert r.verdict("next") == "PASS", r.explain()


def test_claim_file_made_a_fifo_does_not_hang_the_run(sec):
    plan = {"name": "fifo-claim", "actor": {"kind": "command", "command": sec.agent, "timeout_s": 10},
            "steps": [{"id": "work", "do": f"SAVE result.txt {DONE}\nFIFO_CLAIM", "validators": _done_validator()}]}
    r = sec.run(plan, timeout=30)
    assert not r.hung, r.hang_message()
    assert "Traceback" not in r.stderr, r.stderr
    step = r.step("work")
    assert step["verdict"] == "PASS", r.explain()  # the evidence holds; a FIFO is simply no claim
    assert not (step.get("claim") or {}).get("pass"), step
    assert r.rc == 0, r.explain()


def test_earlier_steps_evidence_replaced_by_a_fifo_does_not_hang_the_run(sec):
    plan = {"name": "fifo-evidence", "actor": {"kind": "command", "command": sec.agent, "timeout_s": 10},
            "steps": [
                {"id": "first", "do": f"SAVE result.txt {DONE}",
                 "capture": [{"kind": "command", "name": "probe", "command": "echo ok"}],
                 "validators": _done_validator() + [{"kind": "command_exit_code", "evidence": "probe", "expected": 0}]},
                {"id": "second", "do": "Clean up.\nFIFO_EVIDENCE agent/first/result.txt\n"
                                       "FIFO_EVIDENCE evidence/first/after/probe.json"},
            ]}
    r = sec.run(plan, timeout=30)
    assert not r.hung, r.hang_message()
    assert "Traceback" not in r.stderr, r.stderr
    # PASS when the agent could not reach the file (or the runner kept what it hashed), ERROR when
    # the FIFO is what is left to grade; never a hang, never FAIL
    assert r.verdict("first") in ("PASS", "ERROR"), r.explain()
    assert r.verdict("second") == "SKIPPED", r.explain()
    assert r.rc in (0, 1), r.explain()
