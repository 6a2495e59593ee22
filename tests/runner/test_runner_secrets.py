"""`${VAR}` secrets: the runner uses the real value and writes it nowhere.

A token substituted into a capture's URL, headers or command must reach the server (the request
goes to the real URL) and must not reach any file of the run directory, nor the console, nor
`referee grade`'s output: everything shows `${API_TOKEN}` instead, unless the plan lists the
variable in `public_env`. Database passwords are hidden as `***`.
"""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import run_cli

TOKEN = "s3cr3t-T0KEN-4f9a2c"
DB_PASSWORD = "pg-Passw0rd-77x"


class _Handler(BaseHTTPRequestHandler):
    seen: list[tuple[str, str | None]] = []

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        query = parse_qs(urlsplit(self.path).query)
        header = self.headers.get("X-Api-Token")
        self.seen.append((query.get("token", [""])[0], header))
        ok = query.get("token") == [TOKEN] and header == TOKEN
        # an error page that echoes the request, as many servers do: the token comes back in the body
        body = json.dumps({"ok": ok, "you_asked_for": self.path}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Echo", self.path)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def token_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    _Handler.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], _Handler.seen
    finally:
        server.shutdown()
        server.server_close()


PLAN = """\
name: secrets
steps:
  - id: uses_the_token
    do: nothing
    capture:
      - kind: http
        name: authed
        url: "http://127.0.0.1:${TOKEN_PORT}/check?token=${API_TOKEN}"
        headers: {X-Api-Token: "${API_TOKEN}"}
      - kind: command
        name: cmd
        command: 'test "${API_TOKEN}" = "$API_TOKEN_COPY" && echo same; echo "told: ${API_TOKEN}" >&2'
    validators:
      - {kind: http_status_eq, evidence: authed, expected: 200, name: the server accepted the token}
      - {kind: command_exit_code, evidence: cmd, expected: 0, name: the command got the value}
  - id: shows_it
    do: nothing
    capture:
      - kind: http
        name: bad_port
        url: "http://127.0.0.1:${API_TOKEN}/x"
      - kind: http
        name: authed_again
        url: "http://127.0.0.1:${TOKEN_PORT}/check?token=${API_TOKEN}"
        headers: {X-Api-Token: "${API_TOKEN}"}
      - kind: sql
        name: pg
        url: "postgresql+psycopg://app:${DB_PASSWORD}@127.0.0.1:1/app"
        query: select 1
    validators:
      # fails, and its reason quotes the body: the server echoed the URL, token and all
      - {kind: http_body_contains, evidence: authed_again, text: "not in the body"}
      - {kind: http_status_eq, url: "http://127.0.0.1:${TOKEN_PORT}/check?token=${API_TOKEN}&x=1", expected: 201}
      - {kind: http_status_eq, evidence: bad_port, expected: 200}
      - {kind: text_contains, evidence: pg, text: "1"}
"""


def _plan(tmp_path: Path, public: str | None = None) -> Path:
    path = tmp_path / "secrets.yaml"
    path.write_text(PLAN if public is None else f"public_env: {public}\n" + PLAN)
    return path


def _env(cli_env: dict, port: int) -> dict:
    return {**cli_env, "API_TOKEN": TOKEN, "API_TOKEN_COPY": TOKEN, "TOKEN_PORT": str(port),
            "DB_PASSWORD": DB_PASSWORD}


def _files_holding(root: Path, needle: str) -> list[str]:
    return [str(p.relative_to(root)) for p in sorted(root.rglob("*"))
            if p.is_file() and needle.encode() in p.read_bytes()]


def _record(run_dir: Path, step: str, name: str) -> dict:
    return json.loads((run_dir / "evidence" / step / "after" / name).read_text())


def test_a_secret_is_used_but_written_nowhere(tmp_path, cli_env, token_server):
    port, seen = token_server
    env = _env(cli_env, port)
    out = tmp_path / "out"
    rc, so, se = run_cli(["run", _plan(tmp_path), "--out", out, "--agent", "true"], cwd=tmp_path, env=env)
    (run_dir,) = [p for p in out.glob("secrets/*") if p.is_dir() and not p.is_symlink()]  # not `latest`, index.html
    results = json.loads((run_dir / "results.json").read_text())
    verdicts = {s["id"]: s["verdict"] for s in results["steps"]}
    # the real value was used: the server saw it in the URL and the header, the command compared it
    assert verdicts["uses_the_token"] == "PASS", json.dumps(results, indent=1)[:3000]
    assert (TOKEN, TOKEN) in seen
    assert verdicts["shows_it"] in ("FAIL", "ERROR") and rc == 1, se

    # ... and written nowhere: no file of the run directory, no console line
    assert _files_holding(run_dir, TOKEN) == []
    assert TOKEN not in so and TOKEN not in se
    assert _files_holding(run_dir, DB_PASSWORD) == []

    # what is shown instead: the plan's ${API_TOKEN} (and ${TOKEN_PORT}: no variable is public by default)
    authed = _record(run_dir, "uses_the_token", "authed.json")
    assert authed["url"] == "http://127.0.0.1:${TOKEN_PORT}/check?token=${API_TOKEN}"
    assert "${API_TOKEN}" in authed["body"] and "${API_TOKEN}" in authed["headers"]["x-echo"]
    cmd = _record(run_dir, "uses_the_token", "cmd.json")
    assert cmd["exit_code"] == 0 and "${API_TOKEN}" in cmd["command"] and "told: ${API_TOKEN}" in cmd["stderr"]
    pg = _record(run_dir, "shows_it", "pg.error.json")
    assert pg["detail"]["url"] == "postgresql+psycopg://app:***@127.0.0.1:1/app", pg
    reasons = " | ".join(v["reason"] for s in results["steps"] for v in s["validators"])
    assert "127.0.0.1:${TOKEN_PORT}/check?token=${API_TOKEN}&x=1" in reasons, reasons
    assert "you_asked_for" in reasons and "token=${API_TOKEN}" in reasons, reasons
    junit = (run_dir / "junit.xml").read_text()
    html = (run_dir / "report.html").read_text()
    assert "${API_TOKEN}" in junit and "${API_TOKEN}" in html
    # the frozen plan keeps what the plan says, not what the environment held
    assert "${API_TOKEN}" in (run_dir / "plan.yaml").read_text()
    bad_port = [f for f in json.loads((run_dir / "manifest.json").read_text())["files"]
                if f.get("capture") == "bad_port"]
    assert bad_port and all(TOKEN not in (f.get("error") or "") for f in bad_port)

    # grading again, to the console and as JSON, shows no more than the run did
    for extra in ([], ["--json"]):
        rc2, so2, se2 = run_cli(["grade", run_dir, *extra], cwd=tmp_path, env=env)
        assert rc2 == 1 and TOKEN not in so2 + se2, se2
        if extra:
            assert "${API_TOKEN}" in so2
    assert _files_holding(run_dir, TOKEN) == []


@pytest.mark.parametrize("public", ["[TOKEN_PORT]", "[TOKEN_PORT, API_TOKEN]"])
def test_a_public_variable_is_shown_with_its_value(tmp_path, cli_env, token_server, public):
    port, seen = token_server
    out = tmp_path / "out"
    rc, so, se = run_cli(["run", _plan(tmp_path, public), "--out", out, "--agent", "true"], cwd=tmp_path,
                         env=_env(cli_env, port))
    (run_dir,) = [p for p in out.glob("secrets/*") if p.is_dir() and not p.is_symlink()]  # not `latest`, index.html
    authed = _record(run_dir, "uses_the_token", "authed.json")
    token_public = "API_TOKEN" in public
    shown = TOKEN if token_public else "${API_TOKEN}"
    assert authed["url"] == f"http://127.0.0.1:{port}/check?token={shown}", authed
    assert bool(_files_holding(run_dir, TOKEN)) == token_public
    # a password stays hidden, public or not
    assert _files_holding(run_dir, DB_PASSWORD) == []


def test_a_public_env_entry_must_be_a_variable_name(tmp_path, referee_cli):
    path = tmp_path / "p.yaml"
    path.write_text("public_env: [API-TOKEN]\nsteps:\n  - id: a\n    do: x\n")
    rc, out, err = referee_cli("check", path)
    assert rc == 2 and "p.yaml:1:" in err and "not a variable name" in err, err


def test_a_stdout_as_file_is_stored_as_returned_and_the_docs_say_so(run_plan, cli_env):
    """The record's stdout is scrubbed; the `stdout_as` file keeps the bytes the command printed, secret and all
    (a black-box tester found the difference, which security-inputs.md did not state)."""
    plan = ("name: sa\nsteps:\n  - id: s\n    do: nothing\n    capture:\n"
            "      - {kind: command, name: e, command: 'echo pw=${DB_PASSWORD}'}\n"
            "      - {kind: command, name: f, command: 'echo pw=${DB_PASSWORD}', stdout_as: f.txt}\n"
            "    validators: [{kind: command_exit_code, evidence: e}]\n")
    run = run_plan(plan, agent="true", env={**cli_env, "DB_PASSWORD": DB_PASSWORD})
    after = run.run_dir / "evidence" / "s" / "after"
    assert json.loads((after / "e.json").read_text())["stdout"] == "pw=${DB_PASSWORD}\n"
    assert (after / "f.txt").read_bytes() == f"pw={DB_PASSWORD}\n".encode()
    doc = " ".join((Path(__file__).parents[2] / "docs" / "security-inputs.md").read_text().split())
    assert "`stdout_as` file is one of these: stdout saved byte for byte as returned" in doc
    assert "not scrubbed" in doc


@pytest.mark.parametrize("shown", [TOKEN, TOKEN.lower(), TOKEN.upper(), "S3CR3T-t0ken-4F9A2C"])
def test_a_secret_in_another_letter_case_is_scrubbed_and_refused_in_files(shown):
    # a browser logs a URL's host lowercased ("blocked (not loopback): http://<token>.invalid/x.png"): the value
    # must not get through a log or a file by a change of case
    from referee.runner.envsubst import Secrets

    s = Secrets.of_plan(["API_TOKEN"], {"API_TOKEN": TOKEN})
    assert s.scrub(f"blocked: http://{shown}.invalid/x.png") == "blocked: http://${API_TOKEN}.invalid/x.png"
    out = io.BytesIO()
    s.scrub_stream(io.BytesIO(f"x {shown} y".encode()), out)
    assert out.getvalue() == b"x ${API_TOKEN} y"
    forms = {f for f, _ in s.forms()}
    assert {TOKEN.lower().encode(), TOKEN.upper().encode()} <= forms
