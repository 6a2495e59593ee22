"""The restricted unpickler builds nothing sized by the input (issue 30, case 3): no allow-listed constructor turns
an integer into an allocation, a decompressed pickle is read up to a cap, and what it builds is measured (shared
references counted each time they are reached) before anything walks it."""

from __future__ import annotations

import gzip
import os
import pickle
import struct
import subprocess
import sys
import types
import zlib
from pathlib import Path

import pytest

from referee.audit.ingest.readers import safepickle
from referee.audit.ingest.readers.safepickle import PickleRefused, load_file, loads

ROOT = Path(__file__).resolve().parents[2]
GiB = 1 << 30


class _Calls:
    """Pickles as `fn(*args)`: what a hostile pickle names with GLOBAL + REDUCE."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def _step_info(obs: dict) -> bytes:
    """A BrowserGym step pickle (`StepInfo` with `obs`), made without BrowserGym: a module of that name for the dump."""
    mod = types.ModuleType("browsergym.experiments.loop")

    class StepInfo:
        pass

    StepInfo.__module__, StepInfo.__qualname__ = mod.__name__, "StepInfo"
    mod.StepInfo = StepInfo
    saved = {k: sys.modules.get(k) for k in ("browsergym", "browsergym.experiments", "browsergym.experiments.loop")}
    sys.modules.update({"browsergym": types.ModuleType("browsergym"),
                        "browsergym.experiments": types.ModuleType("browsergym.experiments"), mod.__name__: mod})
    try:
        info = StepInfo()
        info.step, info.obs, info.action = 0, obs, "noop()"
        return pickle.dumps(info, protocol=4)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def _numpy_reconstruct():
    try:
        from numpy._core.multiarray import _reconstruct  # numpy 2
    except ImportError:
        from numpy.core.multiarray import _reconstruct  # numpy 1
    return _reconstruct


SIZED_BY_AN_INTEGER = {
    "bytearray(3 GiB)": pickle.dumps(_Calls(bytearray, 3 * GiB), protocol=4),
    "bytearray(2**62)": pickle.dumps(_Calls(bytearray, 1 << 62), protocol=4),
    "bytearray(2**200)": pickle.dumps(_Calls(bytearray, 1 << 200), protocol=4),
    "set of bytearray(3 GiB)": pickle.dumps(_Calls(set, _Calls(bytearray, 3 * GiB)), protocol=4),
}


@pytest.mark.parametrize("data", list(SIZED_BY_AN_INTEGER.values()), ids=list(SIZED_BY_AN_INTEGER))
def test_no_constructor_turns_an_integer_into_an_allocation(data):
    assert len(data) < 300
    with pytest.raises(PickleRefused) as got:
        loads(data)
    assert "bytearray" in str(got.value) and "\n" not in str(got.value)


def test_the_216_byte_step_pickle_is_refused_in_one_line():
    data = _step_info({"url": "http://127.0.0.1/", "blob": _Calls(bytearray, 3 * GiB)})
    assert len(data) < 400
    with pytest.raises(PickleRefused) as got:
        loads(data)
    assert "bytearray" in str(got.value) and "\n" not in str(got.value)


def test_a_numpy_array_sized_by_its_shape_is_an_inert_stand_in():
    np = pytest.importorskip("numpy")
    _reconstruct = _numpy_reconstruct()

    # an object array of 2**26 slots: numpy would allocate and fill 512 MiB; the stand-in keeps the shape only
    arr = loads(pickle.dumps(_Calls(_reconstruct, np.ndarray, (1 << 26,), np.dtype("O")), protocol=4))
    assert not isinstance(arr, np.ndarray) and arr.pickled_class == "numpy.ndarray" and arr.shape == (1 << 26,)
    assert loads(pickle.dumps(_Calls(np.ndarray, (1 << 40,)), protocol=4)).shape == (1 << 40,)


def test_numpy_state_that_would_crash_numpy_is_inert():
    np = pytest.importorskip("numpy")
    _reconstruct = _numpy_reconstruct()

    # numpy's own __setstate__ reads past a short object list (a segfault): run where a crash cannot take pytest
    data = (pickle.dumps(_Calls(_reconstruct, np.ndarray, (0,), "b"), protocol=2)[:-1]
            + pickle.dumps((1, (1 << 28,), np.dtype("O"), False, [None]), protocol=2)[2:-1] + b"b.")
    code = ("import sys; from referee.audit.ingest.readers.safepickle import loads; "
            "a = loads(sys.stdin.buffer.read()); print(a.pickled_class, a.shape)")
    proc = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 0, proc.stderr[-500:]
    assert proc.stdout.decode().split() == ["numpy.ndarray", f"({1 << 28},)"]


def test_legit_values_still_load_with_their_bytes():
    assert loads(pickle.dumps({"b": bytearray(b"abc"), "s": {1, 2}}, protocol=4)) == {"b": bytearray(b"abc"),
                                                                                    "s": {1, 2}}
    assert loads(pickle.dumps(bytearray(b"xyz"), protocol=5)) == bytearray(b"xyz")


def test_shared_references_that_expand_past_the_cap_are_refused():
    a: list = ["x" * 100]
    for _ in range(60):
        a = [a, a]  # 2**60 leaves when walked; a few hundred bytes pickled
    data = pickle.dumps(a)
    assert len(data) < 2000
    with pytest.raises(PickleRefused, match="builds more than"):
        loads(data)


def test_a_pickle_nested_past_the_depth_limit_is_refused():
    data = b"\x80\x02" + b"]" * 500 + b"a" * 499 + b"."  # 500 empty lists, each appended to the one below
    with pytest.raises(PickleRefused, match="nested deeper"):
        loads(data)


def test_a_gzip_pickle_that_inflates_past_the_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(safepickle, "MAX_PICKLE_BYTES", 1 << 20)
    p = tmp_path / "step_0.pkl.gz"
    with gzip.open(p, "wb") as f:
        pickle.dump(b"\0" * (2 << 20), f, protocol=4)
    assert p.stat().st_size < 20_000
    with pytest.raises(PickleRefused, match="more than 1048576 bytes"):
        load_file(p)


def _gzip_of_zeros_pickle(path: Path, n: int) -> None:
    """step_0.pkl.gz: a pickle whose BINBYTES8 holds `n` zero bytes, as gzip members (each 4 MiB of zeros
    compressed once and repeated: a multi-member gzip stream is the concatenation of what its members hold;
    4 MiB compresses in a fraction of the time 64 MiB takes, to a file of the same ~3 MB)."""
    head = b"\x80\x04\x8e" + struct.pack("<Q", n)
    member = 4 << 20
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = co.compress(b"\0" * member) + co.flush()
    with open(path, "wb") as fh:
        fh.write(gzip.compress(head))
        for _ in range(n // member):
            fh.write(zeros)
        fh.write(gzip.compress(b"\0" * (n % member) + b"."))


MEASURE = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(proc.returncode)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(proc.stderr)
"""


@pytest.mark.parametrize("attack", ["bytearray(3 GiB)", "bytearray(2**62)", "3 GiB of gzip zeros"])
def test_referee_audit_stays_well_below_the_allocation_asked(tmp_path, attack):
    d = tmp_path / "2025-01-01_Agent_on_notes.delete_3"
    d.mkdir()
    if attack == "3 GiB of gzip zeros":
        _gzip_of_zeros_pickle(d / "step_0.pkl.gz", 3 * GiB)
    else:
        n = 3 * GiB if attack == "bytearray(3 GiB)" else 1 << 62
        with gzip.open(d / "step_0.pkl.gz", "wb") as f:
            f.write(_step_info({"url": "http://127.0.0.1/", "blob": _Calls(bytearray, n)}))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "referee", "audit", str(d), "--allow-pickle", "--out", str(tmp_path / "a.jsonl"),
           "--on-error", "stop", "--no-progress", "--workers", "1"]
    out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, env=env,
                         timeout=300).stdout.split("\n", 2)
    rc, max_rss_kib, err = int(out[0]), int(out[1]), out[2]
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "pickle refused" in lines[0] and "step_0.pkl.gz" in lines[0], err
    assert max_rss_kib * 1024 < GiB  # the audit asked for 3 GiB or more, and never held it


# an allow-listed constructor given a number it cannot hold raises (OverflowError, ValueError, ...): a refused pickle
OUT_OF_RANGE = {
    "timedelta(10**12)": pickle.dumps(_Calls(__import__("datetime").timedelta, 10**12), protocol=4),
    "date(10**12)": pickle.dumps(_Calls(__import__("datetime").date, 10**12), protocol=4),
    "datetime(10**30, 1, 1)": pickle.dumps(_Calls(__import__("datetime").datetime, 10**30, 1, 1), protocol=4),
    "complex(10**400)": pickle.dumps(_Calls(complex, 10**400), protocol=4),
    "complex(1, 10**400)": pickle.dumps(_Calls(complex, 1, 10**400), protocol=4),
    "set of timedelta(10**12)": pickle.dumps(_Calls(set, [_Calls(__import__("datetime").timedelta, 10**12)]),
                                             protocol=4),
}


@pytest.mark.parametrize("data", list(OUT_OF_RANGE.values()), ids=list(OUT_OF_RANGE))
def test_a_constructor_that_raises_on_its_arguments_is_a_refused_pickle(data):
    with pytest.raises(PickleRefused) as got:
        loads(data)
    assert "\n" not in str(got.value)
