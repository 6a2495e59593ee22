"""A scripted agent: what it does at each step is read from the JSON file named on its command line.

The file maps a step id to a behaviour (or a list of them, one per attempt):
{"add": "title", "add_env": "VAR", "mark": "file name", "wait_for": "file name", "then_add": "title",
 "claim": {"pass": true, "note": "..."},
 "raw_claim": "text", "exit": 1, "sleep": 30, "stderr": "text", "stderr_lines": 500}
A step the file does not name gets an honest "nothing to do" claim.
"""

import json
import os
import sys
import time
import urllib.request


def _post(path: str, body: dict) -> dict:
    request = urllib.request.Request(
        os.environ["REFEREE_APP_URL"] + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        script = json.load(f)
    step = os.environ["REFEREE_STEP_ID"]
    todo = script.get(step, {"claim": {"pass": False, "note": "nothing scripted"}})
    if isinstance(todo, list):  # one behaviour per attempt: the app counts them
        attempt = _post(f"/api/tick/{step}", {})["n"]
        todo = todo[min(attempt, len(todo)) - 1]
    if "mark" in todo:  # tells a waiting test that the step has started (in the agent's folder)
        with open(os.path.join(os.environ["REFEREE_AGENT_DIR"], todo["mark"]), "w", encoding="utf-8") as f:
            f.write(step)
    if "wait_for" in todo:  # a file the test drops in the agent's folder once it saw the step start
        release = os.path.join(os.environ["REFEREE_AGENT_DIR"], todo["wait_for"])
        for _ in range(400):
            if os.path.exists(release):
                _post("/api/notes", {"title": todo["then_add"]})
                break
            time.sleep(0.1)
    if "add" in todo:
        _post("/api/notes", {"title": todo["add"]})
    if "add_env" in todo:  # the title comes from the plan's actor.env
        _post("/api/notes", {"title": os.environ[todo["add_env"]]})
    if "stderr" in todo:
        sys.stderr.write(todo["stderr"] + "\n")
    for n in range(todo.get("stderr_lines", 0)):
        sys.stderr.write(f"flood line {n}: the agent talks a lot\n")
    claim_file = os.environ["REFEREE_CLAIM_FILE"]
    if "raw_claim" in todo:
        with open(claim_file, "w", encoding="utf-8") as f:
            f.write(todo["raw_claim"])
    elif "claim" in todo:
        with open(claim_file, "w", encoding="utf-8") as f:
            json.dump(todo["claim"], f)
    if "sleep" in todo:
        time.sleep(todo["sleep"])
    return int(todo.get("exit", 0))


if __name__ == "__main__":
    sys.exit(main())
