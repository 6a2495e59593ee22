"""Small files read whole by the pool's workers, several to a chunk: the audit file, the errors, notes and
duplicates are what a serial audit writes and says, in the same order, and this process reads none of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import referee.audit.ingest.chunks as filechunks
from referee.audit.ingest.chunks import FileBatch, Irregular, audit_batch
from referee.audit.run.options import CallbackEvents
from referee.audit.run.parallel import ParallelAudit
from referee.core.executors import ExecutorOptions
from tests.audit.test_audit_scale import auditor, run_audit
from tests.support.scale_work import write_corpus


def _said(traces: Path, out: Path, executor=None) -> tuple[object, list[tuple[str, str]]]:
    """The audit's stats and everything it said (errors, notes, duplicates), in order."""
    said: list[tuple[str, str]] = []
    stats, _ = run_audit(traces, out, executor=executor, events=CallbackEvents(
        skipped=lambda e: said.append(("error", str(e))), note=lambda n: said.append(("note", n)),
        duplicate=lambda e: said.append(("duplicate", str(e)))))
    return stats, said


def _folder(tmp_path: Path, n: int = 24) -> Path:
    """One-run files of several kinds: trace v1 as .json and .jsonl, OpenAI chat, a bad record, a broken file,
    bytes that are not UTF-8, and a run_id that comes twice."""
    lines = write_corpus(tmp_path / "all.jsonl", n, bad_at=(5,)).read_text(encoding="utf-8").splitlines()
    folder = tmp_path / "runs"
    folder.mkdir()
    for i, line in enumerate(lines):
        (folder / f"run{i:03d}.{'json' if i % 2 else 'jsonl'}").write_text(line + "\n", encoding="utf-8")
    chat = {"messages": [{"role": "user", "content": "Delete the note N7"},
                         {"role": "assistant", "content": "Done, N7 was deleted."}], "run_id": "chat-1"}
    (folder / "run100.json").write_text(json.dumps(chat), encoding="utf-8")
    (folder / "run101.json").write_text('{"run_id": "broken", "task": "t", "steps": [', encoding="utf-8")
    latin = lines[1].replace("Create", "Cr\xe9ate").replace('"r0001"', '"latin-1"')
    (folder / "run102.jsonl").write_bytes(latin.encode("latin-1") + b"\n")
    (folder / "run103.json").write_text(lines[3] + "\n", encoding="utf-8")  # r0003 again
    return folder


def test_workers_read_small_files_whole_and_the_audit_is_the_serial_one(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    s1, said1 = _said(folder, tmp_path / "serial.jsonl")
    ex = ParallelAudit(ExecutorOptions("local", 2, None, 4))
    read_here: list[Path] = []
    monkeypatch.setattr(ex, "reading", read_here.append)  # what this process reads itself
    s2, said2 = _said(folder, tmp_path / "pool.jsonl", executor=ex)
    assert (tmp_path / "pool.jsonl").read_bytes() == (tmp_path / "serial.jsonl").read_bytes()
    assert said2 == said1 and s2.written == s1.written and s2.duplicates == s1.duplicates == 1
    kinds = {k for k, _ in said1}
    assert kinds == {"error", "note", "duplicate"}, said1  # the bad record, the broken file, the latin-1 bytes
    assert read_here == [] and ex.chunks == 7 and ex.irregular == 0  # 28 files, 4 to a chunk


def test_a_file_too_big_to_send_is_read_here_and_admitted_at_its_turn(tmp_path, monkeypatch):
    # a line file the workers read, then a file this process reads, holding a run_id of the line file's last
    # chunk: the first in input order is audited, as serially, though the file read here is read first
    lines = write_corpus(tmp_path / "all.jsonl", 40).read_text(encoding="utf-8").splitlines()
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_text("\n".join(lines[:30]) + "\n", encoding="utf-8")
    (folder / "b.json").write_text(json.dumps([json.loads(x) for x in lines[30:]] + [json.loads(lines[28])]),
                                   encoding="utf-8")
    monkeypatch.setattr(filechunks, "WHOLE_MOST", 0, raising=False)  # b.json is read here
    s1, said1 = _said(folder, tmp_path / "serial.jsonl")
    ex = ParallelAudit(ExecutorOptions("local", 2, None, 4))
    s2, said2 = _said(folder, tmp_path / "pool.jsonl", executor=ex)
    assert said2 == said1 and [k for k, _ in said1] == ["duplicate"] and "b.json" in said1[0][1].split(":")[0]
    assert (tmp_path / "pool.jsonl").read_bytes() == (tmp_path / "serial.jsonl").read_bytes()
    assert s2.written == s1.written == 40


def test_a_file_a_worker_cannot_read_is_read_here_from_its_start(tmp_path, monkeypatch):
    import referee.audit.ingest.readers as readers
    import referee.audit.run.parallel as parallel

    folder = _folder(tmp_path, 12)
    run_audit(folder, tmp_path / "serial.jsonl")
    real = readers.read_traces

    failed: list[str] = []

    def failing(path, fmt=None, **kw):
        if Path(path).name == "run004.jsonl" and not failed:
            failed.append(str(path))
            raise RuntimeError("a reader's bug, met on a worker")
        return real(path, fmt, **kw)

    # the workers never start: every chunk is audited in this process, where the patch holds; the first read of
    # run004 (the worker's, in its chunk) fails, the one this process then makes from the file's start does not
    monkeypatch.setattr(readers, "read_traces", failing)
    monkeypatch.setattr(parallel, "START_AFTER_S", 60.0)
    monkeypatch.setattr(parallel, "START_IF_LEFT_S", 60.0)
    ex = ParallelAudit(ExecutorOptions("local", 2, None, 4), adaptive=True)
    run_audit(folder, tmp_path / "pool.jsonl", executor=ex)
    assert not ex.started and ex.here == ex.chunks == 4 and ex.irregular == 1
    assert len(failed) == 1
    assert (tmp_path / "pool.jsonl").read_bytes() == (tmp_path / "serial.jsonl").read_bytes()


def test_a_resume_over_small_files_audits_only_the_runs_left(tmp_path):
    folder = _folder(tmp_path)
    run_audit(folder, tmp_path / "serial.jsonl")
    first = tmp_path / "serial.jsonl"
    out = tmp_path / "pool.jsonl"
    out.write_bytes(b"".join(first.read_bytes().splitlines(keepends=True)[:10]))  # a run stopped after 10 records
    ex = ParallelAudit(ExecutorOptions("local", 2, None, 4))
    stats, _ = run_audit(folder, out, executor=ex)
    # the workers did not audit those again, nor the repeat of r0003 (a duplicate, its record standing too)
    assert stats.skipped_done == 10 and ex.not_again == 11
    assert out.read_bytes() == first.read_bytes()


def test_audit_batch_reads_each_file_as_a_serial_audit_does(tmp_path):
    folder = _folder(tmp_path, 6)
    files = sorted(folder.iterdir())
    got = audit_batch(auditor(), FileBatch(tuple((str(f), None) for f in files)))
    assert len(got) == len(files) and not any(isinstance(g, Irregular) for g in got)
    by_name = {Path(f).name: g for f, g in zip(files, got)}
    assert [r[2] for r in by_name["run000.jsonl"]] == ["r0000"] and by_name["run000.jsonl"][0][-1][0].startswith("{")
    assert by_name["run101.json"][0][3] is not None  # the broken file: one record, its error
    assert by_name["run102.jsonl"][0][9]  # not UTF-8: its note travels with its record (after group, task)
    missing = audit_batch(auditor(), FileBatch(((str(folder / "gone.json"), "no-such-format"),)))
    assert missing == [Irregular(str(folder / "gone.json"), 1)]  # raised there: read here, where it raises again


@pytest.mark.parametrize("fmt, size, whole", [(None, 10, True), ("referee", 10, True), ("my-plugin", 10, False),
                                              (None, 3 << 20, False)])
def test_which_files_go_whole(tmp_path, fmt, size, whole):
    p = tmp_path / "t.json"
    p.write_bytes(b" " * size)
    assert filechunks.whole_size(p, fmt) == (size if whole else None)
    assert filechunks.whole_size(tmp_path, None) is None  # a folder (a run folder) is read here


@pytest.mark.parametrize("left_s, starts", [(0.0, True), (60.0, False)])
def test_adaptive_weighs_small_files_by_what_is_not_audited_yet(tmp_path, monkeypatch, left_s, starts):
    import referee.audit.run.parallel as parallel

    # the time rule out of the way: the workers start after the second chunk audited here (the first also pays for
    # compiling the rules' patterns, so it gives no rate) when the rest looks long enough, and never otherwise
    monkeypatch.setattr(parallel, "START_AFTER_S", 60.0)
    monkeypatch.setattr(parallel, "START_IF_LEFT_S", left_s)
    folder = _folder(tmp_path)
    run_audit(folder, tmp_path / "serial.jsonl")
    ex = ParallelAudit(ExecutorOptions("local", 2, None, 4), adaptive=True)
    run_audit(folder, tmp_path / "pool.jsonl", executor=ex)
    assert ex.started is starts and ex.chunks == 7
    assert ex.here >= 2 if starts else ex.here == 7
    assert (tmp_path / "pool.jsonl").read_bytes() == (tmp_path / "serial.jsonl").read_bytes()
