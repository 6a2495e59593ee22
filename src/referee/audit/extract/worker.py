"""The extraction a worker does: claim-blind view parts in, findings and view facts out.

It sits inside `referee.audit.extract`, so the import-linter wall that keeps extractors from the
claim reader, the report, the readers and the pipeline holds for it too. It receives only the
packed view parts of a chunk (`referee.audit.view.blind.ViewParts`: task, observations, actions with a
terminal answer's words left out, tools, copied field by field) and gives back, per view, the
findings of each sample and the view's facts (hash, observed steps, where report atoms are looked
for) that deciding needs. `referee.audit.run.parallel` calls it on a worker before anything of the
claim channel is unpacked there.
"""

from __future__ import annotations

from typing import Any, Callable

from referee.audit.records import FINDING_FIELDS, Finding, findings_json
from referee.audit.view.blind import freeze_view, unpack_parts
from referee.audit.view.facts import ViewFacts
from referee.errors import BackendError, exc_brief, plugin_failure

# per view: (its facts, None when it could not be frozen; [(findings JSON, cacheable)] per sample, None when over the
# record budget; its errors; the view's own error or None)
Extracted = tuple[ViewFacts | None, list[tuple[str, bool]] | None, list[str], str | None]


def extract_sample(extractor: Any, view: Any, sample: int, errors: list[str]) -> tuple[dict[str, Finding], bool]:
    """One sample's findings and whether the backend answered. A BackendError is no answer: every field
    `unknown` (but those the error `kept`), the reason added to `errors`, and (the caller's part) nothing cached, so
    a resume asks again."""
    try:
        return extractor.extract(view, sample), True
    except BackendError as exc:
        errors.append(f"extraction sample {sample}: {exc.message}"[:300])
        # a backend that settled fields before its call failed (rules+llm: the rules' findings) keeps them
        kept = getattr(exc, "kept", None)
        return kept if kept is not None else {f: Finding(value="unknown", note=exc.message[:200])
                                              for f in FINDING_FIELDS}, False
    except Exception as exc:
        if (failed := plugin_failure(extractor, "extractor", exc)) is None:
            raise
        raise failed from exc


def extract_views(extractor: Any, packed: bytes, samples: int, catch: tuple[type[BaseException], ...],
                  guard: Callable[[int, Callable[[], bool]], bool] | None = None) -> list[Extracted]:
    """Freeze each view of a chunk from its parts and extract `samples` findings from it.

    A sample whose backend got no answer (BackendError) is all `unknown`, listed in the view's errors
    and marked not to be cached, as `Auditor` does in one process: a resume asks again. A view the
    extractor cannot take (one of `catch`: nesting too deep, a shape it does not expect) is one error
    for that view, not the end of the chunk; the parent reports it as a skipped record, as a serial
    audit would.

    `guard(n, work)` runs the extraction of view n (`work()`, True) under the record budget: False, when it went
    over, gives that view no findings (None; referee.audit.run.budget: the caller writes its `review` record).
    """
    results: list[Extracted] = []
    for n, parts in enumerate(unpack_parts(packed)):
        try:
            view = freeze_view(parts)
            found: list[tuple[str, bool]] | None = []
            errors: list[str] = []

            def work() -> bool:
                for i in range(samples):
                    fields, ok = extract_sample(extractor, view, i, errors)
                    found.append((findings_json(fields), ok))  # type: ignore[union-attr]
                return True

            if not (work() if guard is None else guard(n, work)):
                found = None
            results.append((ViewFacts.of(view), found, errors, None))
        except catch as exc:
            results.append((None, [], [], exc_brief(exc)))
    return results
