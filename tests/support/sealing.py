"""Re-sign a run directory a test edited on purpose, with the real signing code and the suite's key.

A test that changes claims.json or manifest.json to exercise the grader (not the seal) calls
`reseal(run_dir)` afterwards, as if the runner had written those bytes; tests of the seal itself
leave it alone and expect the change to be caught.
"""

from __future__ import annotations

from pathlib import Path

from referee.rundir.keys import load_key
from referee.rundir.seal import SEAL_FILE, FileDigest, Seal, read_seal, sign


def reseal(run_dir: Path) -> Seal:
    """Sign plan.yaml, manifest.json and claims.json as they are now (a missing claims.json is made `{}`)."""
    run_dir = Path(run_dir)
    key = load_key()
    if not (run_dir / "claims.json").exists():
        (run_dir / "claims.json").write_text("{}")
    old = read_seal(run_dir)

    def digest(name: str) -> FileDigest:
        return FileDigest.of((run_dir / name).read_bytes())

    seal = sign(Seal(key_id=key.key_id, run_id=old.run_id if isinstance(old, Seal) else "resealed-by-a-test",
                     plan=digest("plan.yaml"), manifest=[digest("manifest.json")], claims=[digest("claims.json")],
                     final=True), key)
    (run_dir / SEAL_FILE).write_text(seal.model_dump_json(indent=2) + "\n")
    return seal
