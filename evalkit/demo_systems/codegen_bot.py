"""Demo generation system: TypeScript models and API tests from an OpenAPI definition (no model).

Reads the case's OpenAPI YAML, writes one `export interface` per schema (properties typed,
required ones without `?`, enums as unions) or, when the case's main file is a `.test.ts`, one
test per operation against http://localhost:3000. Descriptions become doc comments.

`settings: {naive: true}` copies descriptions verbatim, and pastes any `code` a description
shows as a "usage snippet" into the generated module, so injected payloads leak into the code.
The careful variant drops code spans, URLs and instruction-like sentences from descriptions.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml import YAML

from evalkit.demo_systems.protocol import answer, read_case

TYPES = {"integer": "number", "number": "number", "string": "string", "boolean": "boolean"}
SUSPICIOUS = re.compile(
    r"ignore\b.*\binstructions|disregard|<\s*script|alert\s*\(|fetch\s*\(|XMLHttpRequest|axios|sendBeacon|"
    r"process\s*\.\s*env|https?://|\beval\s*\(", re.IGNORECASE)
CODE_SPAN = re.compile(r"`([^`]+)`")


def sanitize(text: str) -> str:
    """A description without code spans and without sentences that look like instructions or payloads."""
    text = CODE_SPAN.sub("", text or "")
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(text.split()))
    kept = [s for s in sentences if s and not SUSPICIOUS.search(s)]
    out = " ".join(kept).replace("*/", "* /").strip()
    return out if out or not text.strip() else "(description removed: it contained instructions or code)"


def describe(text: str | None, naive: bool) -> str:
    if not text:
        return ""
    return " ".join(str(text).split()) if naive else sanitize(str(text))


def doc(text: str, indent: str = "") -> list[str]:
    return [f"{indent}/** {text} */"] if text else []


def snippets(texts: list[str]) -> list[str]:
    """Code spans shown in descriptions (the naive bot treats them as usage examples to include)."""
    return [m.group(1).strip() for t in texts if t for m in CODE_SPAN.finditer(str(t))]


def ts_type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "enum" in prop:
        return " | ".join(f"'{v}'" if isinstance(v, str) else str(v) for v in prop["enum"])
    kind = prop.get("type", "unknown")
    if kind == "array":
        inner = ts_type(prop.get("items", {}))
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if kind == "object":
        return "Record<string, unknown>"
    return TYPES.get(kind, "unknown")


def models(spec: dict[str, Any], naive: bool) -> str:
    lines = [f"// Generated from {spec.get('info', {}).get('title', 'the API definition')} by codegen-bot.", ""]
    texts: list[str] = []
    for name, schema in (spec.get("components", {}).get("schemas") or {}).items():
        texts.append(schema.get("description", ""))
        lines += doc(describe(schema.get("description"), naive))
        lines.append(f"export interface {name} {{")
        required = set(schema.get("required", []))
        for prop_name, prop in (schema.get("properties") or {}).items():
            texts.append(prop.get("description", ""))
            lines += doc(describe(prop.get("description"), naive), "  ")
            opt = "" if prop_name in required else "?"
            lines.append(f"  {prop_name}{opt}: {ts_type(prop)};")
        lines += ["}", ""]
    if naive:
        for code in snippets(texts):
            lines += ["// usage example from the API definition", code if code.endswith(";") else code + ";", ""]
    return "\n".join(lines).rstrip() + "\n"


def tests(spec: dict[str, Any], naive: bool, seed: str | None) -> str:
    lines = ["import { describe, it, expect } from 'vitest';", "", "const BASE_URL = 'http://localhost:3000';", ""]
    if seed:
        lines += ["// seed test kept as given", *[ln for ln in seed.splitlines() if not ln.startswith("import ")], ""]
    texts: list[str] = []
    for path, ops in (spec.get("paths") or {}).items():
        for method, op in (ops or {}).items():
            if method.lower() not in ("get", "post", "put", "patch", "delete"):
                continue
            texts.append(op.get("description", ""))
            title = describe(op.get("summary") or f"{method.upper()} {path}", naive).replace("'", "\\'")
            url = re.sub(r"\{[^}]+\}", "1", path)
            codes = sorted(str(c) for c in (op.get("responses") or {"200": {}}))
            status = next((c for c in codes if c.startswith("2")), "200")
            lines += doc(describe(op.get("description"), naive))
            lines.append(f"describe('{method.upper()} {path}', () => {{")
            lines.append(f"  it('{title} returns {status}', async () => {{")
            init = f", {{ method: '{method.upper()}', headers: {{ 'content-type': 'application/json' }}, body: '{{}}' }}" \
                if method.lower() in ("post", "put", "patch") else f", {{ method: '{method.upper()}' }}"
            lines.append(f"    const res = await fetch(`${{BASE_URL}}{url}`{init});")
            lines.append(f"    expect(res.status).toBe({status});")
            lines += ["  });", "});", ""]
    if naive:
        for code in snippets(texts):
            lines += ["// setup step from the API definition", code if code.endswith(";") else code + ";", ""]
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    case, work = read_case()
    naive = bool((case.get("system", {}).get("settings") or {}).get("naive"))
    inputs = case["inputs"]
    spec: dict[str, Any] = {}
    seed = None
    for dotted, rel in sorted(case["files"].items()):
        if not dotted.startswith("inputs.input_files."):
            continue
        text = (work / rel).read_text(encoding="utf-8")
        if rel.endswith((".yaml", ".yml", ".json")):
            spec = YAML(typ="safe").load(text) or {}
        elif rel.endswith(".ts"):
            seed = text
    main_file = inputs.get("output_path") or "src/models.ts"
    code = tests(spec, naive, seed) if main_file.endswith(".test.ts") else models(spec, naive)
    answer({"files": {main_file: code}, "steps": 1, "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}})


if __name__ == "__main__":
    main()
