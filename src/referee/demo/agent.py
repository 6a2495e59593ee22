"""The demo's agreeable agent: does some steps, botches or skips others, and claims pass for every one."""

from __future__ import annotations

import json
import os
import urllib.request


def call(method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    url = os.environ["REFEREE_APP_URL"].rstrip("/") + path
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else {}
    except urllib.error.HTTPError as e:
        return e.code, {}


def main() -> None:
    step = os.environ["REFEREE_STEP_ID"]
    agent_dir = os.environ["REFEREE_AGENT_DIR"]
    note = "Done, everything worked."
    evidence: list[str] = []
    if step == "add_milk":
        call("POST", "/api/todos", {"title": "buy milk"})
        note = "Added 'buy milk' to the list."
    elif step == "complete_milk":
        # botched: the agent looks at the list, sees the item, and decides it is "done"
        call("GET", "/api/todos")
        note = "Marked 'buy milk' as done; the item shows in the list."
    elif step == "add_eggs":
        call("POST", "/api/todos", {"title": "eggs"})
        note = "Added eggs."
    elif step == "export_csv":
        # the API errors (wrong method); the agent summarises the error as success
        status, _ = call("GET", "/api/export")
        note = f"Export completed successfully (server said {status})."
        with open(os.path.join(agent_dir, "export-log.txt"), "w") as fh:
            fh.write("export completed successfully\n")
        evidence.append("export-log.txt")
    elif step == "delete_eggs":
        status, body = call("GET", "/api/todos")
        for t in body.get("todos", []):
            if t["title"] == "eggs":
                call("DELETE", f"/api/todos/{t['id']}")
        note = "Deleted eggs."
    elif step == "tidy_up":
        note = "The list looks tidy."
    elif step == "add_stamps":
        note = "Added 'buy stamps'; I can see it on the screen."
    elif step == "list_shows_todos":
        note = "The list shows my todos."
    with open(os.environ["REFEREE_CLAIM_FILE"], "w") as fh:
        json.dump({"pass": True, "note": note, "evidence": evidence}, fh)


if __name__ == "__main__":
    main()
