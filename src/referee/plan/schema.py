"""The JSON Schema of plan v1, generated from the plan models and every registered validator and capture kind."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

SCHEMA_ID = "https://referee.dev/schema/plan-v1.json"


def _kind_variant(kind: str, params: type[BaseModel], summary: str, defs: dict[str, Any]) -> dict[str, Any]:
    """One `oneOf` branch: the kind's parameter model with `kind` fixed to its name."""
    s = params.model_json_schema(ref_template="#/$defs/{model}")
    for name, d in s.pop("$defs", {}).items():
        defs.setdefault(name, d)
    props = s.setdefault("properties", {})
    props["kind"] = {"const": kind, "description": summary}
    s["required"] = ["kind", *[r for r in s.get("required", []) if r != "kind"]]
    s["title"] = kind
    s["description"] = summary
    return s


def _script_item(verb: str, model: type[BaseModel], shorthand: bool, defs: dict[str, Any]) -> dict[str, Any]:
    s = model.model_json_schema(ref_template="#/$defs/{model}")
    for name, d in s.pop("$defs", {}).items():
        defs.setdefault(name, d)
    # `goto: ""` opens nothing, so the parser refuses it; the other shorthands take any text
    short: dict[str, Any] = {"type": "string", **({"minLength": 1} if verb == "goto" else {})}
    arg = {"anyOf": [s, short]} if shorthand else s
    return {"type": "object", "title": verb, "properties": {verb: arg}, "required": [verb],
            "additionalProperties": False}


def plan_schema() -> dict[str, Any]:
    """Plan v1 as a JSON Schema (draft 2020-12) editors can complete and check against.

    Validator, capture and `script:` items are `oneOf` branches keyed by `kind` (or the action
    verb), built from the registries, so a plugin's kinds appear once it is installed.

    >>> s = plan_schema(); s["title"], "http_status_eq" in {v["title"] for v in s["$defs"]["Validator"]["oneOf"]}
    ('referee plan v1', True)
    """
    from referee.plan.captures import capture_specs
    from referee.plan.model import Plan
    from referee.plan.script import ACTIONS, SHORTHAND
    from referee.plan.validators import validator_specs

    schema = Plan.model_json_schema(ref_template="#/$defs/{model}")
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    defs["Validator"] = {"oneOf": [_kind_variant(n, s.Params, s.summary, defs)
                                   for n, s in sorted(validator_specs.items())]}
    defs["Capture"] = {"oneOf": [_kind_variant(n, s.Params, s.summary, defs) for n, s in sorted(capture_specs.items())]}
    defs["ScriptAction"] = {"oneOf": [_script_item(v, m, v in SHORTHAND, defs) for v, m in ACTIONS.items()]}
    step = defs["Step"]["properties"]
    step["validators"]["items"] = {"$ref": "#/$defs/Validator"}
    step["capture"]["items"] = {"$ref": "#/$defs/Capture"}
    step["script"]["items"] = {"$ref": "#/$defs/ScriptAction"}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            **{k: v for k, v in schema.items() if k != "title"}, "title": "referee plan v1"}
