"""The instruction interpreter shared by the test agents (command actors, DESIGN.md protocol).

An agent reads its step from the environment (REFEREE_STEP_ID, REFEREE_STEP_DO, REFEREE_APP_URL,
REFEREE_AGENT_DIR, REFEREE_CLAIM_FILE) and the step JSON on stdin. The `do:` text is read one line
at a time; a line whose first word is a verb below is an instruction, any other line is prose.

    POST <path> <json>            HTTP POST (JSON body) to REFEREE_APP_URL + path; ok if 2xx
    DELETE <path>                 HTTP DELETE; ok if 2xx
    WRITE <path> <text>           write text to a file (path relative to the agent's cwd, or absolute)
    SAVE <name> <text>            write text to REFEREE_AGENT_DIR/<name> (the agent's evidence)
    SYMLINK <name> <target>       make REFEREE_AGENT_DIR/<name> a symlink to <target>
    SQL <sqlalchemy-url> <stmt>   execute one statement (committed)
    DDB_PUT <endpoint> <table> <json-item>   put an item (string/number attributes) with boto3
    RUN <shell command>           run it; ok if exit code 0
    SLEEP <seconds>               sleep
    TAMPER <relpath> <text>       overwrite <run dir>/<relpath> (run dir = REFEREE_AGENT_DIR/../..)
    EVIDENCE <path>               add <path> to the claim's evidence list
    EXIT <code>                   exit with this code after writing the claim

`{agent_dir}` in an instruction is replaced by REFEREE_AGENT_DIR.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


class Step:
    def __init__(self) -> None:
        self.id = os.environ.get("REFEREE_STEP_ID", "")
        self.do = os.environ.get("REFEREE_STEP_DO", "")
        self.app_url = os.environ.get("REFEREE_APP_URL", "").rstrip("/")
        self.agent_dir = Path(os.environ.get("REFEREE_AGENT_DIR") or ".")
        self.claim_file = os.environ.get("REFEREE_CLAIM_FILE")
        raw = "" if sys.stdin is None or sys.stdin.closed else _read_stdin()
        self.stdin_raw = raw
        try:
            self.stdin_json = json.loads(raw) if raw.strip() else None
        except ValueError:
            self.stdin_json = None
        self.agent_dir.mkdir(parents=True, exist_ok=True)

    @property
    def run_dir(self) -> Path:
        return self.agent_dir.parent.parent

    def instructions(self) -> list[tuple[str, str]]:
        out = []
        for line in self.do.splitlines():
            line = line.strip()
            if not line:
                continue
            verb, _, rest = line.partition(" ")
            if verb in VERBS:
                out.append((verb, rest.replace("{agent_dir}", str(self.agent_dir))))
        return out


def _read_stdin() -> str:
    try:
        if sys.stdin.isatty():
            return ""
        return sys.stdin.read()
    except (OSError, ValueError):
        return ""


def http(method: str, url: str, body: bytes | None = None) -> int:
    req = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def do_one(step: Step, verb: str, rest: str, extra_evidence: list[str]) -> tuple[bool, str, int | None]:
    """Perform one instruction; returns (ok, what happened, exit code request or None)."""
    if verb in ("POST", "DELETE"):
        path, _, body = rest.partition(" ")
        status = http(verb, step.app_url + path, body.encode() if body else None)
        return 200 <= status < 300, f"{verb} {path} -> {status}", None
    if verb == "WRITE":
        path, _, text = rest.partition(" ")
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return True, f"wrote {path}", None
    if verb == "SAVE":
        name, _, text = rest.partition(" ")
        p = step.agent_dir / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return True, f"saved {name}", None
    if verb == "SYMLINK":
        name, _, target = rest.partition(" ")
        os.symlink(target, step.agent_dir / name)
        return True, f"linked {name}", None
    if verb == "SQL":
        url, _, stmt = rest.partition(" ")
        import sqlalchemy as sa

        eng = sa.create_engine(url)
        try:
            with eng.begin() as conn:
                conn.execute(sa.text(stmt))
        finally:
            eng.dispose()
        return True, "sql ok", None
    if verb == "DDB_PUT":
        endpoint, table, item = rest.split(" ", 2)
        import boto3

        client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing")
        typed = {k: ({"N": str(v)} if isinstance(v, (int, float)) else {"S": str(v)})
                 for k, v in json.loads(item).items()}
        client.put_item(TableName=table, Item=typed)
        return True, "ddb put ok", None
    if verb == "RUN":
        rc = subprocess.run(rest, shell=True).returncode
        return rc == 0, f"ran -> {rc}", None
    if verb == "SLEEP":
        time.sleep(float(rest))
        return True, "slept", None
    if verb == "TAMPER":
        rel, _, text = rest.partition(" ")
        p = step.run_dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return True, f"tampered {rel}", None
    if verb == "EVIDENCE":
        extra_evidence.append(rest)
        return True, f"evidence {rest}", None
    if verb == "EXIT":
        return True, "exit", int(rest)
    raise ValueError(verb)


VERBS = ("POST", "DELETE", "WRITE", "SAVE", "SYMLINK", "SQL", "DDB_PUT", "RUN", "SLEEP", "TAMPER", "EVIDENCE", "EXIT")


def perform(step: Step) -> tuple[bool, list[str], list[str], int]:
    """Perform every instruction; returns (all ok, notes, evidence paths, exit code)."""
    ok, notes, evidence, code = True, [], [], 0
    for verb, rest in step.instructions():
        try:
            good, what, exit_req = do_one(step, verb, rest, evidence)
        except Exception as exc:  # an agent's failure is just a failure
            good, what, exit_req = False, f"{verb} failed: {exc}", None
        ok = ok and good
        notes.append(what)
        if exit_req is not None:
            code = exit_req
    return ok, notes, evidence, code


def write_claim(step: Step, claim) -> None:
    """Write the claim file: a dict is JSON-encoded, a str is written as is, None writes nothing."""
    if not step.claim_file or claim is None:
        return
    text = claim if isinstance(claim, str) else json.dumps(claim)
    Path(step.claim_file).parent.mkdir(parents=True, exist_ok=True)
    Path(step.claim_file).write_text(text)
