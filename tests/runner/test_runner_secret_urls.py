"""A `${VAR}` substituted into a URL's user or password part is percent-encoded, so a password holding
`@ : / ? #` reaches the database whole and no part of it is written anywhere (a black-box tester's case:
`app:${DB_PASSWORD}@127.0.0.1` with `ab@Zq7Wd9LmPx` connected to host `Zq7Wd9LmPx@127.0.0.1`, whose name
then stood in results.json, the manifest, junit.xml, report.html and the console).
"""

from __future__ import annotations

import socket
import struct
import threading
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from referee.plan.envvars import expand, shown
from referee.runner.envsubst import Secrets
from tests.conftest import run_cli

PASSWORDS = ["ab@Zq7Wd9LmPx", "p:a/s?s#w%rd@1", "x@y", "100%25@"]


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_password_substituted_into_a_url_parses_as_written(password):
    env = {"DB_PASSWORD": password, "DB_USER": "app"}
    for plan in ("postgresql+psycopg://app:${DB_PASSWORD}@127.0.0.1:55433/app",
                 "postgresql+psycopg://${DB_USER}:${DB_PASSWORD}@127.0.0.1:55433/app"):
        url = make_url(expand(plan, env))
        assert (url.username, url.password, url.host, url.port, url.database) == \
               ("app", password, "127.0.0.1", 55433, "app"), expand(plan, env)
    # one variable holding user and password: its first ':' separates them
    url = make_url(expand("postgresql+psycopg://${CREDS}@127.0.0.1/app", {"CREDS": f"app:{password}"}))
    assert (url.username, url.password, url.host) == ("app", password, "127.0.0.1")
    # a public variable is shown as it was used
    assert shown("pg://app:${DB_PASSWORD}@h/x", env, {"DB_PASSWORD"}) == expand("pg://app:${DB_PASSWORD}@h/x", env)


def test_only_the_user_part_of_a_url_is_encoded():
    env = {"T": "a@b/c"}
    assert expand("http://127.0.0.1:5/x?t=${T}", env) == "http://127.0.0.1:5/x?t=a@b/c"
    assert expand("sqlite:///${T}/app.db", env) == "sqlite:///a@b/c/app.db"
    assert expand("echo pg://u:${T}@h", env) == "echo pg://u:a@b/c@h"  # a command is the shell's, not a URL


def test_the_encoded_forms_of_a_secret_are_scrubbed():
    s = Secrets.of_plan(["CREDS"], {"CREDS": "app:pa@ss/w0rd"})
    assert s.scrub("x app:pa%40ss%2Fw0rd y app%3Apa%40ss%2Fw0rd z") == "x ${CREDS} y ${CREDS} z"


def _pg_server(passwords: list[str]) -> socket.socket:
    """A loopback PostgreSQL stand-in: asks for a cleartext password, notes it, refuses the login."""
    srv = socket.create_server(("127.0.0.1", 0))

    def read(conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise ConnectionError
            data += chunk
        return data

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                while True:  # SSL and GSS encryption requests: refused with 'N'; then the startup message
                    size, code = struct.unpack("!ii", read(conn, 8))
                    read(conn, size - 8)
                    if code not in (80877103, 80877104):
                        break
                    conn.sendall(b"N")
                conn.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
                kind, size = struct.unpack("!ci", read(conn, 5))
                passwords.append(read(conn, size - 4).rstrip(b"\0").decode())
                fields = b"SFATAL\0C28P01\0Mpassword authentication failed\0\0"
                conn.sendall(b"E" + struct.pack("!i", len(fields) + 4) + fields)
            except (ConnectionError, OSError, struct.error):
                pass

    def loop() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return srv


def test_a_password_with_at_reaches_the_database_whole_and_is_written_nowhere(tmp_path, cli_env):
    password, tail = "ab@Zq7Wd9LmPx", "Zq7Wd9LmPx"
    seen: list[str] = []
    srv = _pg_server(seen)
    port = srv.getsockname()[1]
    # hostaddr: libpq connects there whatever the host part says, so even a URL parsed wrong looks up no name
    plan = ("name: pgat\nsteps:\n  - id: s\n    do: nothing\n    validators:\n"
            "      - {kind: sql_row_present, table: t, url: \"postgresql+psycopg://app:${DB_PASSWORD}@127.0.0.1:"
            f"{port}/app?hostaddr=127.0.0.1&sslmode=disable&connect_timeout=5\"}}\n")
    (tmp_path / "p.yaml").write_text(plan)
    try:
        rc, out, err = run_cli(["run", tmp_path / "p.yaml", "--out", tmp_path / "out", "--agent", "true"],
                               cwd=tmp_path, env={**cli_env, "DB_PASSWORD": password})
    finally:
        srv.close()
    assert seen and set(seen) == {password}, seen  # the server was asked with the whole password
    run_dir = Path(tmp_path / "out" / "pgat" / "latest").resolve()
    results = (run_dir / "results.json").read_text()
    assert rc == 1 and "password authentication failed" in results, results[:2000]
    leaked = [str(p.relative_to(run_dir)) for p in sorted(run_dir.rglob("*"))
              if p.is_file() and tail.encode() in p.read_bytes()]
    assert leaked == [] and tail not in out + err, (leaked, out, err)
