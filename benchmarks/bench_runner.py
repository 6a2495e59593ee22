"""Runner overhead and grade time per step on a 200-step plan with a no-op agent (not a test).

Usage: python benchmarks/bench_runner.py [--steps 200]
Prints per-step figures for: the runner with a no-op Python actor (pure runner overhead: claim
handling, agent-folder hashing, manifest writes), the same with a no-op command actor (adds one
process per step), and `grade` over the finished run directory.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from referee.grader import grade  # noqa: E402
from referee.plan import load_plan_text  # noqa: E402
from referee.runner.run import run_plan  # noqa: E402

NOOP_AGENT = '''
import referee
class Noop(referee.Actor):
    def act(self, ctx):
        ctx.save("note.txt", ctx.step_id)
        return ctx.claim(True, "noop")
'''


def plan_text(n: int, actor: str) -> str:
    lines = ["version: 1", "name: bench", f"actor: {actor}", "steps:"]
    for i in range(n):
        lines += [f"  - id: s{i}", f"    do: step {i}", "    validators:",
                  "      - {kind: text_contains, evidence: note.txt, text: s}",
                  "      - {kind: regex_match, evidence: note.txt, pattern: '^s[0-9]+$'}"]
    return "\n".join(lines) + "\n"


def bench(n: int, actor: str, label: str, tmp: Path) -> None:
    lp = load_plan_text(plan_text(n, actor), str(tmp / "bench.yaml"))
    t0 = time.perf_counter()
    outcome = run_plan(lp, out=tmp / "runs")
    run_s = time.perf_counter() - t0
    assert outcome.results.summary["PASS"] == n, outcome.results.summary
    t0 = time.perf_counter()
    for _ in range(3):
        res = grade(outcome.run_dir)
    grade_s = (time.perf_counter() - t0) / 3
    assert res.summary["PASS"] == n
    print(f"{label:<28} run {run_s * 1000 / n:7.2f} ms/step   grade {grade_s * 1000 / n:6.2f} ms/step   "
          f"({n} steps, run incl. final grade {run_s:.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "bench_noop_agent.py").write_text(NOOP_AGENT)
        sys.path.insert(0, str(tmp))
        bench(args.steps, "{kind: python, target: 'bench_noop_agent:Noop'}", "no-op python actor", tmp)
        agent = (f"{{kind: command, command: \"{sys.executable} -c 'import os; "
                 f"open(os.environ[\\\"REFEREE_AGENT_DIR\\\"]+\\\"/note.txt\\\",\\\"w\\\").write(os.environ[\\\"REFEREE_STEP_ID\\\"])'\"}}")
        bench(args.steps, agent, "no-op command actor (python)", tmp)
        shell = "{kind: command, command: 'echo \"$REFEREE_STEP_ID\" > \"$REFEREE_AGENT_DIR/note.txt\"'}"
        bench(args.steps, shell, "no-op command actor (sh)", tmp)


if __name__ == "__main__":
    main()
