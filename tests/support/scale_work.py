"""Work for executor tests that a worker process can import: a synthetic trace corpus, chunk functions
that square, hang, or kill their own process, and an extractor that writes down what it was shown."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

MARK = "CLAIMCHANNELMARK"  # only ever in reports, narrations and terminal answers


def write_corpus(path: Path, n: int, *, bad_at: tuple[int, ...] = (), steps: int = 12) -> Path:
    """n varied trace v1 records (unique tasks, every disposition), with bad records at `bad_at`."""
    verbs = ["Delete the note N{i}", "Create a task T{i} named report", "Send the invoice INV-{i} to ops",
             "What is the total of order O{i}?", "Set the timezone of user U{i} to UTC"]
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            if i in bad_at:
                fh.write(json.dumps({"run_id": f"bad-{i}", "steps": []}) + "\n")
                continue
            task = verbs[i % len(verbs)].format(i=i)
            st = []
            for k in range(steps):
                st.append({"action": {"name": ["get_item", "update_item", "delete_item", "search"][k % 4],
                                      "args": {"id": f"X{i}-{k}", "value": k * 3.5}},
                           "observation": {"text": f"ok item X{i}-{k} total ${k * 7}.50 on 2024-05-{k % 28 + 1:02d}",
                                           "data": {"id": f"X{i}-{k}", "n": k, "tags": ["a", "b"][: k % 3]}},
                           "narration": f"{MARK} step {k}"})
            if i % 3 == 0:  # a terminal answer call: its words are claim channel
                st.append({"action": {"name": "send_msg_to_user", "args": {"content": f"{MARK} done {i}"}}})
            report = None if i % 3 == 0 else [f"{MARK} Done, X{i}-1 updated for ${i}.50.",
                                               f"{MARK} I could not finish."][i % 2]
            fh.write(json.dumps({"trace_version": 1, "run_id": f"r{i:04d}", "task": task, "steps": st,
                                 "report": report, "meta": {"group": f"g{i % 4}"}}) + "\n")
    return path


def square(payload: list[int]) -> list[int]:
    time.sleep(0.01)
    return [x * x for x in payload]


def square_slowly(payload: list[int]) -> list[int]:
    time.sleep(0.3)
    return [x * x for x in payload]


def die_on_poison(payload: list[int]) -> list[int]:
    if -1 in payload:
        os.kill(os.getpid(), signal.SIGKILL)
    return [x * x for x in payload]


class SeeingExtractor:
    """An extractor that appends every view it is shown, as JSON, to a file (in whatever process it runs)."""

    name = "seeing"
    model = None
    prompt_version = "1"

    def __init__(self, log: str) -> None:
        self.log = log

    def extract(self, view, sample: int = 0) -> dict:
        from referee.audit.extract.rules import RulesExtractor

        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(view.as_json(), default=str) + "\n")
        return RulesExtractor().extract(view, sample)


class FlakyExtractor:
    """The rules extractor, except that every view whose task says FAIL gets no answer (BackendError), until
    `fail` is False: what a model backend does when its server is down, here on any worker."""

    name = "flaky"
    model = None
    prompt_version = "1"

    def __init__(self, fail: bool = True) -> None:
        self.fail = fail

    def extract(self, view, sample: int = 0) -> dict:
        from referee.audit.extract.rules import RulesExtractor
        from referee.errors import BackendError

        if self.fail and "FAIL" in view.task:
            raise BackendError("the server went away")
        return RulesExtractor().extract(view, sample)


class SlowExtractor:
    """The rules extractor, `seconds` slower per view: work that takes long enough on any machine for a pool's
    workers to come up while the parent is still auditing chunks itself."""

    name = "slow"
    model = None
    prompt_version = "1"

    def __init__(self, seconds: float = 0.04) -> None:
        self.seconds = seconds

    def extract(self, view, sample: int = 0) -> dict:
        from referee.audit.extract.rules import RulesExtractor

        time.sleep(self.seconds)
        return RulesExtractor().extract(view, sample)
