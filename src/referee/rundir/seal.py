"""The seal of a run directory: an HMAC-SHA256, with a key kept outside it, over what decides its verdicts.

`seal.json` signs the SHA-256 and size of `manifest.json` (which lists every evidence file's path,
hash and size), of `claims.json`, and of the plan the runner loaded (the bytes it froze as
`plan.yaml`). The runner re-seals at every manifest flush, before it replaces a file, listing both
the file on disk and the one about to be written: a run killed at any moment still verifies, and
the finished run's seal lists exactly one of each. The grader checks the seal before it reads
anything else (`check_seal`). Cache entries that could decide a verdict (OCR) carry their own
HMAC under the same key (`cache_mac`), so a cache file an agent wrote is ignored, not trusted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from referee.core.fsutil import atomic_write_bytes, open_regular, sha256_bytes
from referee.errors import EvidenceError
from referee.rundir.keys import SigningKey

SEAL_FILE = "seal.json"
MAX_SEAL_BYTES = 1 << 20
_DOMAIN = b"referee-seal-v1\n"
_CACHE_DOMAIN = b"referee-cache-v1\n"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FileDigest(_Model):
    """A file's bytes as the runner wrote them: SHA-256 and size."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)

    @staticmethod
    def of(data: bytes) -> "FileDigest":
        """The digest of `data`.

        >>> FileDigest.of(b"").sha256[:12]
        'e3b0c44298fc'
        """
        return FileDigest(sha256=sha256_bytes(data), size=len(data))


class Seal(_Model):
    """seal.json: what the runner signed. `manifest`/`claims` list one digest, or two while a write is under way."""

    seal_version: Literal[1] = 1
    algorithm: Literal["hmac-sha256"] = "hmac-sha256"
    key_id: str = Field(pattern=r"^[0-9a-f]{16}$")
    run_id: str = Field(max_length=200)
    plan: FileDigest
    manifest: list[FileDigest] = Field(min_length=1, max_length=2)
    claims: list[FileDigest] = Field(min_length=1, max_length=2)
    final: bool = False
    mac: str = Field(default="", pattern=r"^([0-9a-f]{64})?$")

    def message(self) -> bytes:
        """The canonical bytes the MAC covers: every field but `mac`, as sorted, compact JSON."""
        return canonical(_DOMAIN, self)


def canonical(domain: bytes, model: BaseModel) -> bytes:
    """The bytes a seal's MAC covers: `domain`, then every field of `model` but `mac` as sorted, compact JSON.

    >>> canonical(b"d:", FileDigest.of(b""))[:12]
    b'd:{"sha256":'
    """
    body = model.model_dump(mode="json", exclude={"mac"})
    return domain + json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def mac_hex(key: SigningKey, message: bytes) -> str:
    """HMAC-SHA256 of `message` under the signing key, as hex: every seal and cache entry referee signs."""
    return hmac.new(key.secret, message, hashlib.sha256).hexdigest()


def sign(seal: Seal, key: SigningKey) -> Seal:
    """The seal with its MAC filled in.

    >>> from pathlib import Path; k = SigningKey(b"k" * 32, Path("/k"))
    >>> d = FileDigest.of(b"x"); s = sign(Seal(key_id=k.key_id, run_id="r", plan=d, manifest=[d], claims=[d]), k)
    >>> len(s.mac), hmac.compare_digest(s.mac, sign(s, k).mac)
    (64, True)
    """
    return seal.model_copy(update={"mac": mac_hex(key, seal.message())})


class Sealer:
    """The runner's writer of manifest.json, claims.json and seal.json, in the order that keeps them verifiable.

    Each `write` first seals both the digests on disk and the new ones, then replaces the files;
    `final=True` then seals the new ones alone.
    """

    def __init__(self, run_dir: Path, key: SigningKey, run_id: str) -> None:
        self.run_dir, self.key, self.run_id = Path(run_dir), key, run_id
        self.plan: FileDigest | None = None
        self._manifest: FileDigest | None = None
        self._claims: FileDigest | None = None

    def set_plan(self, data: bytes) -> None:
        """The plan the runner loaded, by its bytes (not the file, which an agent could rewrite)."""
        self.plan = FileDigest.of(data)

    def _seal(self, manifests: list[FileDigest | None], claims: list[FileDigest | None], final: bool,
              durable: bool) -> None:
        assert self.plan is not None, "set_plan before the first write"

        def uniq(ds: list[FileDigest | None]) -> list[FileDigest]:
            out: list[FileDigest] = []
            for d in ds:
                if d is not None and d not in out:
                    out.append(d)
            return out

        seal = sign(Seal(key_id=self.key.key_id, run_id=self.run_id, plan=self.plan, manifest=uniq(manifests),
                         claims=uniq(claims), final=final), self.key)
        atomic_write_bytes(self.run_dir / SEAL_FILE, seal.model_dump_json(indent=2).encode() + b"\n", durable=durable)

    def write(self, *, manifest: bytes | None = None, claims: bytes | None = None, durable: bool = False,
              final: bool = False) -> None:
        """Replace manifest.json and/or claims.json under a seal that holds before, during and after."""
        new_m = FileDigest.of(manifest) if manifest is not None else self._manifest
        new_c = FileDigest.of(claims) if claims is not None else self._claims
        if new_m is None or new_c is None:
            raise ValueError("the first write must give both manifest and claims")
        self._seal([new_m, self._manifest], [new_c, self._claims], final=False, durable=durable)
        if claims is not None:
            atomic_write_bytes(self.run_dir / "claims.json", claims, durable=durable)
        if manifest is not None:
            atomic_write_bytes(self.run_dir / "manifest.json", manifest, durable=durable)
        self._manifest, self._claims = new_m, new_c
        if final:
            self._seal([new_m], [new_c], final=True, durable=durable)


# -- checking -------------------------------------------------------------------------------------

SealStatus = Literal["verified", "unsigned", "foreign", "failed"]


@dataclass(frozen=True)
class SealCheck:
    """The outcome of `check_seal`: `reason` names the file and why whenever status is not `verified`.

    `unsigned`: no seal at all; `foreign`: sealed, but not with a key this machine has (it cannot be
    checked here); `failed`: the seal or a file it covers does not hold.
    """

    status: SealStatus
    reason: str = ""
    seal: Seal | None = None


def read_seal(run_dir: Path) -> Seal | str | None:
    """seal.json parsed; None when there is none; a one-line reason when it is not a valid seal."""
    path = Path(run_dir) / SEAL_FILE
    try:  # a link or a FIFO planted as seal.json is refused, never followed or waited on
        with open_regular(path, root=Path(run_dir)) as fh:
            data = fh.read(MAX_SEAL_BYTES + 1)
    except FileNotFoundError:
        return None
    except EvidenceError as exc:
        return f"{SEAL_FILE}: {exc.message}"
    except OSError as exc:
        return f"{SEAL_FILE} is unreadable ({exc.strerror or exc})"
    if len(data) > MAX_SEAL_BYTES:
        return f"{SEAL_FILE} is larger than any seal ({MAX_SEAL_BYTES} bytes)"
    try:
        return Seal.model_validate_json(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        at = ".".join(str(p) for p in err["loc"]) or "seal"
        return f"{SEAL_FILE} is not a valid seal: {at}: {err['msg']}"


def check_seal(run_dir: Path, key: SigningKey | None, *, manifest: bytes, plan: bytes | None,
               claims: bytes | None, key_problem: str | None = None) -> SealCheck:
    """Check seal.json against the bytes the grader is about to use (read once, by the caller).

    `key` None: this machine has no usable key (`key_problem` says why): a seal cannot be checked.

    >>> import tempfile; from pathlib import Path; d = Path(tempfile.mkdtemp())
    >>> k = SigningKey(b"k" * 32, Path("/k")); s = Sealer(d, k, "r"); s.set_plan(b"steps: []")
    >>> s.write(manifest=b"{}", claims=b"{}", final=True)
    >>> check_seal(d, k, manifest=b"{}", plan=b"steps: []", claims=b"{}").status
    'verified'
    >>> check_seal(d, k, manifest=b"{ }", plan=b"steps: []", claims=b"{}").reason
    'manifest.json: sha256 differs from the signed manifest (edited after the run?)'
    """
    seal = read_seal(run_dir)
    if seal is None:
        return SealCheck("unsigned", f"unsigned run directory: no {SEAL_FILE} (made before runs were sealed, "
                                     "by hand, or its seal was deleted)")
    if isinstance(seal, str):
        return SealCheck("failed", seal)
    if key is None:
        return SealCheck("foreign", f"{SEAL_FILE}: cannot be checked here: {key_problem or 'no signing key'}", seal)
    if not hmac.compare_digest(seal.key_id, key.key_id):
        return SealCheck("foreign", f"{SEAL_FILE}: signed with another key (key id {seal.key_id}; this machine's "
                                    f"key {key.path} has id {key.key_id})", seal)
    if not hmac.compare_digest(mac_hex(key, seal.message()), seal.mac):
        return SealCheck("failed", f"{SEAL_FILE}: signature does not match (edited after the run?)", seal)
    if FileDigest.of(manifest) not in seal.manifest:
        return SealCheck("failed", "manifest.json: sha256 differs from the signed manifest (edited after the run?)",
                         seal)
    if plan is None:
        return SealCheck("failed", "plan.yaml is missing: the plan the runner loaded is gone", seal)
    if FileDigest.of(plan) != seal.plan:
        return SealCheck("failed", f"plan.yaml differs from the plan the runner loaded (sha256 "
                                   f"{sha256_bytes(plan)[:12]}..., signed {seal.plan.sha256[:12]}...)", seal)
    if claims is None:
        return SealCheck("failed", "claims.json is missing: the signed claims are gone", seal)
    if FileDigest.of(claims) not in seal.claims:
        return SealCheck("failed", "claims.json: sha256 differs from the signed claims (edited after the run?)", seal)
    return SealCheck("verified", "", seal)


# -- caches whose entries could decide a verdict ------------------------------------------------------

def cache_mac(key: SigningKey, namespace: str, entry: str, value: Any) -> str:
    """The MAC of one cache entry (e.g. an OCR result by image hash): an entry without it is recomputed.

    >>> from pathlib import Path; k = SigningKey(b"k" * 32, Path("/k"))
    >>> cache_mac(k, "ocr", "e:abc", {"lines": []}) == cache_mac(k, "ocr", "e:abc", {"lines": []})
    True
    >>> cache_mac(k, "ocr", "e:abc", {"lines": []}) == cache_mac(k, "ocr", "e:abd", {"lines": []})
    False
    """
    body = json.dumps([namespace, entry, value], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return mac_hex(key, _CACHE_DOMAIN + body.encode())
