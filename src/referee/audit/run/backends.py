"""Build `referee audit`'s two backends, the evidence extractor and the claim reader, through their registries.

Both registries (`referee.audit.extract.extractors`, `referee.audit.claim.reader.claim_readers`; entry point
groups `referee.extractors`, `referee.claim_readers`) hold *factories*: a class or a function. The
same rule builds referee's own backends and plugins: a factory is called with keyword config, and
only with the keys it declares as attributes:

- `needs_llm = True`: it is called with `client=`, a `referee.core.llm.LLMClient` (an OpenAI-compatible
  endpoint from `--base-url`/`--model`/`OPENAI_*`); one client is made, and only when a chosen
  backend needs it, and shared by both.
- `takes_tools = True`: it is called with `tools=`, the path of the user's tool map, when `--tools`
  is given; `--tools` with a backend that does not declare it is a usage error.

A factory that declares neither is called with no arguments. What it gives has `name`, `model`,
`prompt_version` (the cache key) and `extract(view, sample)` (extractor) or `read(report)`
(claim reader); an extractor may set `default_runs` (the `llm` one: 5) for when `--runs` is not given.
A call with no answer it can stand by raises `referee.errors.BackendError`: the auditor reads it as
`unknown`, caches nothing, and lists it in the record's `errors` so a resume asks again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from referee.core.registry import Registry
from referee.errors import PluginError, UsageError

CONFIG_KEYS = ("client", "tools")


def needs_llm(factory: Any) -> bool:
    """Whether a backend factory is built with an LLM client.

    >>> from referee.audit.claim.reader import LLMClaimReader, RulesClaimReader
    >>> needs_llm(LLMClaimReader), needs_llm(RulesClaimReader)
    (True, False)
    """
    return bool(getattr(factory, "needs_llm", False))


def takes_tools(factory: Any) -> bool:
    """Whether a backend factory reads a tool map (`--tools`)."""
    return bool(getattr(factory, "takes_tools", False))


@dataclass
class Backends:
    """The backends one audit uses, the LLM client they share (None when none needs one), and the
    extraction runs per trace when `--runs` is not given."""

    extractor: Any
    claim_reader: Any
    client: Any = None

    @property
    def default_runs(self) -> int:
        return int(getattr(self.extractor, "default_runs", 1) or 1)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


def _factories(extractor: str, claims: str) -> tuple[tuple[Registry, Any], tuple[Registry, Any]]:
    # looked up at call time through the modules, so a test that forbids building a backend sees it
    from referee.audit import extract as extract_mod
    from referee.audit.claim import reader as claims_mod

    return ((extract_mod.extractors, extract_mod.get_extractor_factory(extractor)),
            (claims_mod.claim_readers, claims_mod.claim_readers.get(claims)))


def _check(what: str, name: str, obj: Any, method: str) -> Any:
    missing = [a for a in ("name", "prompt_version", method) if not hasattr(obj, a)]
    if missing:
        raise PluginError(f"{what} '{name}' gave {type(obj).__name__}, which lacks {', '.join(missing)}",
                          fix=f"a {what} has name, model, prompt_version and {method}(...) (docs/plugins.md)")
    return obj


def make_backends(extractor: str = "rules", claims: str = "rules", *, llm_client: Callable[[], Any] | None = None,
                  tools: Path | None = None) -> Backends:
    """Build the extractor and the claim reader registered under these names.

    `llm_client()` makes the client, called once, only if a chosen backend `needs_llm`.

    >>> b = make_backends("rules", "rules")
    >>> b.extractor.name, b.claim_reader.name, b.client, b.default_runs
    ('rules', 'rules', None, 1)
    >>> make_backends("rules", "llm")
    Traceback (most recent call last):
    ...
    referee.errors.UsageError: the 'llm' claim reader backend needs an LLM endpoint; give --base-url and --model
    """
    (ex_reg, ex_factory), (cr_reg, cr_factory) = _factories(extractor, claims)
    if tools is not None and not takes_tools(ex_factory):
        readers = [n for n, f in ex_reg.items() if takes_tools(f)]
        which = f"{' and '.join(readers)} backends" if len(readers) > 1 else f"{''.join(readers) or 'rules'} backend"
        raise UsageError(f"--tools is read by the {which}; the {extractor!r} backend does not use it")
    client = None
    chosen = ((ex_reg, extractor, ex_factory), (cr_reg, claims, cr_factory))
    for reg, name, factory in chosen:
        if needs_llm(factory) and client is None:
            if llm_client is None:
                raise UsageError(f"the {name!r} {reg.what} needs an LLM endpoint; give --base-url and --model")
            client = llm_client()
    try:
        built = []
        for (reg, name, factory), method in zip(chosen, ("extract", "read")):
            config: dict[str, Any] = {}
            if needs_llm(factory):
                config["client"] = client
            if tools is not None and reg is ex_reg:
                config["tools"] = tools
            built.append(_check(reg.what, name, reg.create(name, **config), method))
    except BaseException:
        if client is not None:
            client.close()
        raise
    return Backends(built[0], built[1], client)
