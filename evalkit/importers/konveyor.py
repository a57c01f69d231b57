"""A Konveyor analyzer report (output.yaml) -> an evalkit `agentic` or `migration` suite.

The report is a list of rulesets; each has `violations`: rule id -> {description, category, labels,
effort, incidents: [{uri, message, codeSnip, lineNumber, variables}]}. The report is usually made
on another machine (`file:///tmp/source-code/...`), so an incident's file is found by the longest
suffix of its path that exists under `--source`; incidents whose file is not there are left out
with a warning.

* `agentic` (default): one case for the whole application: `source/` (a copy of the source tree),
  `inputs.incidents`, `inputs.matchers` (rule id -> how to re-check it) and one
  `reference.expected_tasks` entry per incident.
* `migration`: one case per file with incidents: `legacy/<name>` and its incidents (with the
  violation's category); with `--rules`, the suite's `defaults.matchers` (rule id -> matcher, for
  incidents_resolved); no expected file (reference-based metrics are then not applicable).

Matchers come from the rule's `when:` condition when `--rules` has the rule (`java.referenced` with
location IMPORT/PACKAGE -> `import`, other locations and `builtin.filecontent` -> `regex`), else
from the incidents themselves (`variables.name` of a module -> its package; a class, field or
annotation name -> a word regex; `variables.matchingText` -> that text; else the incident's line).
A `regex` matcher is meant for `re.search(pattern, file_text)`; patterns that need line anchors
carry their own `(?m)` flag.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString

from evalkit.casemodels import CASE_ID, IncidentMatcher
from evalkit.errors import InputError, Problem
from evalkit.fsutil import atomic_write_text, confine_writes, copy_file, ensure_dir, guarded
from evalkit.yamlio import line_of, load_yaml, plain

KINDS = ("agentic", "migration")
#: Folders never copied into a case's source tree: VCS data, build outputs, IDE and tool caches.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "target", "build", "out", "bin", "node_modules", ".gradle",
                       ".idea", ".vscode", ".settings", "__pycache__", ".mvn", ".m2", ".venv", "venv", "dist"})
SKIP_SUFFIXES = (".class", ".jar", ".war", ".ear", ".pyc", ".o", ".so")
DEFAULT_MAX_SOURCE_MB = 50.0
MAX_SOURCE_FILES = 20_000
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_KONVEYOR_PATTERN = re.compile(r"[\w$.*()|]+")
_LEADING_FLAGS = re.compile(r"^\(\?([aiLmsux]+)\)")


@dataclass
class ReportIncident:
    """One incident of the report, as read (file not resolved yet)."""

    rule_id: str
    description: str
    message: str
    uri: str
    line: int | None
    variables: dict[str, Any]
    report_line: int | None
    category: str | None = None
    """The violation's category (mandatory, optional, potential), when the report gives one."""


@dataclass
class Found:
    """An incident whose file exists under the source root."""

    inc: ReportIncident
    file: str
    """Path relative to the source root (POSIX separators)."""


@dataclass
class ImportResult:
    """What an import wrote and what it had to leave out."""

    written: list[str] = field(default_factory=list)
    """Case ids written."""
    incidents: int = 0
    """Incidents written (over all cases)."""
    matchers: dict[str, IncidentMatcher] = field(default_factory=dict)
    """Rule id -> matcher (agentic: in the case; migration: in the suite's defaults)."""
    matcher_origin: dict[str, str] = field(default_factory=dict)
    """Rule id -> `rule` (from --rules) or `incident` (derived from the incidents)."""
    warnings: list[str] = field(default_factory=list)


# ---- reading the report ------------------------------------------------------------------------

def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def load_report(path: Path) -> list[ReportIncident]:
    """Every incident of an analyzer report; InputError (file:line, what was expected) on a bad one."""
    shown = str(path)
    if not path.exists():
        raise InputError(Problem(shown, None, "file not found (expected a Konveyor analyzer output.yaml)"))
    node = load_yaml(path, shown)
    expected = "expected a list of rulesets (`- name: ...` with `violations: {RULE_ID: {description, incidents: [...]}}`)"
    if not isinstance(node, list):
        raise InputError(Problem(shown, line_of(node, ()) or 1, expected))
    out: list[ReportIncident] = []
    problems: list[Problem] = []
    for i, ruleset in enumerate(node):
        if not isinstance(ruleset, dict):
            problems.append(Problem(shown, line_of(node, (i,)), f"ruleset {i + 1}: {expected}"))
            continue
        violations = ruleset.get("violations")
        if violations is None:
            continue  # a ruleset where nothing fired
        where = f"ruleset {ruleset.get('name') or i + 1}"
        if not isinstance(violations, dict):
            problems.append(Problem(shown, line_of(node, (i, "violations")),
                                    f"{where}: violations: expected a mapping rule id -> {{description, incidents}}"))
            continue
        for rule_id, violation in violations.items():
            loc = (i, "violations", rule_id)
            if not isinstance(violation, dict):
                problems.append(Problem(shown, line_of(node, loc), f"{rule_id}: expected a mapping with description and incidents"))
                continue
            incidents = violation.get("incidents") or []
            if not isinstance(incidents, list):
                problems.append(Problem(shown, line_of(node, loc + ("incidents",)), f"{rule_id}: incidents: expected a list"))
                continue
            for j, inc in enumerate(incidents):
                iloc = loc + ("incidents", j)
                if not isinstance(inc, dict) or not isinstance(inc.get("uri"), str) or not inc["uri"].strip():
                    problems.append(Problem(shown, line_of(node, iloc),
                                            f"{rule_id}: incident {j + 1}: expected a mapping with uri (and message, lineNumber)"))
                    continue
                line = inc.get("lineNumber")
                if line is not None and (isinstance(line, bool) or not isinstance(line, int)):
                    problems.append(Problem(shown, line_of(node, iloc + ("lineNumber",)),
                                            f"{rule_id}: incident {j + 1}: lineNumber: expected a whole number, got {line!r}"))
                    continue
                variables = inc.get("variables")
                category = _str(violation.get("category")).lower()
                out.append(ReportIncident(
                    category=category if category in ("mandatory", "optional", "potential") else None,
                    rule_id=str(rule_id), description=_str(violation.get("description")), message=_str(inc.get("message")),
                    uri=inc["uri"].strip(), line=line if isinstance(line, int) and line >= 1 else None,
                    variables=plain(variables) if isinstance(variables, dict) else {}, report_line=line_of(node, iloc)))
    if problems:
        raise InputError(problems)
    return out


def uri_parts(uri: str) -> tuple[str, ...]:
    """Path components of a `file://` URI or a plain path (no root, no `.`/`..`)."""
    path = unquote(urlparse(uri).path) if uri.startswith("file:") else uri
    path = path.replace("\\", "/")
    return tuple(p for p in PurePosixPath(path).parts if p not in ("/", ".", "..") and not re.fullmatch(r"[A-Za-z]:", p))


def resolve(uri: str, source: Path) -> str | None:
    """The file under ``source`` that the longest suffix of the URI's path names (relative path), or None."""
    parts = uri_parts(uri)
    for i in range(len(parts)):
        candidate = source.joinpath(*parts[i:])
        if candidate.is_file():
            return "/".join(parts[i:])
    return None


def _file_lines(source: Path, rel: str, cache: dict[str, list[str]]) -> list[str]:
    if rel not in cache:
        try:
            cache[rel] = (source / rel).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            cache[rel] = []
    return cache[rel]


# ---- rules and matchers ------------------------------------------------------------------------

def load_rules(path: Path) -> dict[str, dict[str, Any]]:
    """Rule id -> rule from a folder of Konveyor rule YAML files, one such file, or a JSON list of rules."""
    shown = str(path)
    if not path.exists():
        raise InputError(Problem(shown, None, "--rules: not found (expected a folder of rule YAML files or a JSON list of rules)"))
    files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file()) if path.is_dir() else [path]
    rules: dict[str, dict[str, Any]] = {}
    for f in files:
        if f.suffix == ".json":
            try:
                data = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(Problem(str(f), None, f"cannot read: {exc}")) from None
            except json.JSONDecodeError as exc:
                raise InputError(Problem(str(f), exc.lineno, f"malformed JSON: {exc.msg} (column {exc.colno})")) from None
        else:
            data = plain(load_yaml(f, str(f)))
        if isinstance(data, dict) and isinstance(data.get("rules"), list):
            data = data["rules"]
        if not isinstance(data, list):
            if path.is_dir():
                continue  # ruleset.yaml (name, labels) and other non-rule files of a rules folder
            raise InputError(Problem(str(f), 1, "expected a list of rules (ruleID, when, ...)"))
        for rule in data:
            if isinstance(rule, dict) and isinstance(rule.get("ruleID"), str):
                rules.setdefault(rule["ruleID"], rule)
    return rules


def _pattern_regex(pattern: str) -> str | None:
    """A Konveyor `java.referenced` pattern (dots, `*` wildcards, `(a|b)` groups) as a Python regex."""
    if not _KONVEYOR_PATTERN.fullmatch(pattern):
        return None
    out = pattern.replace(".", r"\.").replace("$", r"\$").replace("*", r"[\w.]*")
    try:
        re.compile(out)
    except re.error:
        return None
    return out


def _import_regex(module_regex: str) -> str:
    return rf"(?m)^\s*import\s+(?:static\s+)?{module_regex}"


def _leaves(cond: Any) -> list[dict[str, Any]]:
    """The provider conditions of a `when:` (through `or` / `and`), negated ones left out."""
    if isinstance(cond, list):
        return [leaf for c in cond for leaf in _leaves(c)]
    if not isinstance(cond, dict) or cond.get("not") is True:
        return []
    out = []
    for key in ("or", "and"):
        if key in cond:
            out.extend(_leaves(cond[key]))
    if any(k not in ("or", "and", "as", "from", "ignore", "not") for k in cond):
        out.append(cond)
    return out


def _leaf_matcher(leaf: dict[str, Any]) -> tuple[str, str] | None:
    """(type, pattern) for one provider condition, or None when it cannot be re-checked in a file's text."""
    ref = leaf.get("java.referenced")
    if isinstance(ref, dict) and isinstance(ref.get("pattern"), str):
        pattern = ref["pattern"].strip()
        location = str(ref.get("location") or "").upper()
        if location in ("IMPORT", "PACKAGE"):
            m = re.fullmatch(r"([\w$]+(?:\.[\w$]+)*)\.?\*?", pattern)
            if m:
                return ("import", m.group(1))
            rx = _pattern_regex(pattern)
            return ("regex", _import_regex(rx)) if rx else None
        # Other locations name a type, annotation, method or field: match its simple name in the text.
        if _DOTTED.fullmatch(pattern):
            *pkg, name = pattern.split(".")
            if location == "ANNOTATION":
                prefix = rf"(?:{re.escape('.'.join(pkg))}\.)?" if pkg else ""
                return ("regex", rf"@{prefix}{re.escape(name)}\b")
            return ("regex", rf"\b{re.escape(name)}\b")
        rx = _pattern_regex(pattern)
        return ("regex", rx) if rx else None
    content = leaf.get("builtin.filecontent")
    if isinstance(content, dict) and isinstance(content.get("pattern"), str):
        try:
            re.compile(content["pattern"])
        except re.error:
            return None
        return ("regex", content["pattern"])
    return None  # java.dependency, builtin.xml, builtin.file, ...: nothing to find in a source file's text


def _combine(parts: list[tuple[str, str]]) -> IncidentMatcher | None:
    uniq = list(dict.fromkeys(parts))
    if not uniq:
        return None
    if len(uniq) == 1:
        return IncidentMatcher(type=uniq[0][0], pattern=uniq[0][1])  # type: ignore[arg-type]
    if all(t == "import" for t, _ in uniq):
        return IncidentMatcher(type="regex", pattern=_import_regex(
            "(?:" + "|".join(re.escape(p) for _, p in uniq) + r")\b"))
    regexes = [_import_regex(re.escape(p) + r"\b") if t == "import" else p for t, p in uniq]
    # Global flags such as `(?m)` must lead the whole pattern: lift them out of the alternatives.
    flags: set[str] = set()
    bodies = []
    for r in regexes:
        m = _LEADING_FLAGS.match(r)
        if m:
            flags.update(m.group(1))
            r = r[m.end():]
        bodies.append(r)
    lead = f"(?{''.join(sorted(flags))})" if flags else ""
    pattern = lead + "|".join(f"(?:{b})" for b in dict.fromkeys(bodies))
    try:
        re.compile(pattern)
    except re.error:
        return None
    return IncidentMatcher(type="regex", pattern=pattern)


def matcher_from_rule(rule: dict[str, Any]) -> IncidentMatcher | None:
    """A matcher from a rule's `when:` condition (None when no condition can be re-checked in text)."""
    parts = [m for m in (_leaf_matcher(leaf) for leaf in _leaves(rule.get("when"))) if m]
    return _combine(parts)


def _package(name: str) -> str:
    """`javax.persistence.Column` -> `javax.persistence`; `javax.jms.*` -> `javax.jms`."""
    parts = name.rstrip("*").rstrip(".").split(".")
    while len(parts) > 1 and (parts[-1][:1].isupper() or parts[-1] == ""):
        parts.pop()
    return ".".join(parts)


def matcher_from_incidents(found: list[Found], source: Path, lines_cache: dict[str, list[str]]) -> IncidentMatcher | None:
    """A matcher from a rule's incidents: module names -> import, names -> word regex, else the line's text."""
    parts: list[tuple[str, str]] = []
    for f in found:
        v = f.inc.variables
        raw_name = v.get("name")
        name = raw_name if isinstance(raw_name, str) else ""
        kind = str(v.get("kind") or "")
        text_lines = _file_lines(source, f.file, lines_cache)
        line_text = text_lines[f.inc.line - 1] if f.inc.line and f.inc.line <= len(text_lines) else ""
        if kind == "Module" and _DOTTED.fullmatch(name.rstrip("*").rstrip(".")):
            parts.append(("import", _package(name)))
        elif name and re.fullmatch(r"[\w$]+", name):
            at = "@" if re.search(rf"@(?:[\w$]+\.)*{re.escape(name)}\b", line_text) else r"\b"
            parts.append(("regex", rf"{at}{re.escape(name)}\b"))
        elif isinstance(v.get("matchingText"), str) and v["matchingText"].strip():
            parts.append(("regex", re.escape(v["matchingText"].strip())))
        elif line_text.strip():
            parts.append(("regex", re.escape(line_text.strip())))
    return _combine(parts)


def matcher_hits(matcher: IncidentMatcher, text: str) -> bool:
    """Whether a matcher finds its incident in a file's text (how evalkit's re-check is meant to read it)."""
    if matcher.type == "import":
        return re.search(_import_regex(re.escape(matcher.pattern) + r"\b"), text) is not None
    return re.search(matcher.pattern, text) is not None


# ---- writing the suite -------------------------------------------------------------------------

def _literal_strings(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _literal_strings(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_literal_strings(v) for v in node]
    if isinstance(node, str) and "\n" in node and "\t" not in node and not any(
            ln != ln.rstrip() for ln in node.splitlines()):
        return LiteralScalarString(node)
    return node


def dump_yaml(data: dict[str, Any], header: str) -> str:
    """YAML that reads back as ``data``: multi-line messages as block scalars when that round-trips."""
    def dump(d: Any) -> str:
        y = YAML(typ="rt", pure=True)
        y.width = 4096
        y.default_flow_style = False
        buf = StringIO()
        y.dump(d, buf)
        return buf.getvalue()

    text = dump(_literal_strings(data))
    if plain(YAML(typ="rt", pure=True).load(text)) != data:
        text = dump(data)
    return f"# {header}\n" + text


def case_id_for(name: str) -> str:
    """A string made into a valid case id (letters, digits, `._-`; at most 120 characters)."""
    cid = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._")[:120].rstrip("-._")
    return cid if cid and re.match(CASE_ID, cid) else "case"


def migration_ids(files: list[str]) -> dict[str, str]:
    """Relative path -> case id: the shortest path suffix (without extension) that is unique."""
    stems = {f: [p for p in PurePosixPath(f).with_suffix("").parts] for f in files}
    out: dict[str, str] = {}
    depth = 1
    pending = list(files)
    while pending:
        cands = {f: case_id_for(".".join(stems[f][-depth:])) for f in pending}
        counts: dict[str, int] = {}
        for c in cands.values():
            counts[c] = counts.get(c, 0) + 1
        taken = set(out.values())
        nxt = []
        for f in pending:
            c = cands[f]
            if (counts[c] == 1 and c not in taken) or depth >= len(stems[f]):
                base, n = c, 2
                while c in taken:
                    c, n = f"{base}-{n}", n + 1
                out[f] = c
                taken.add(c)
            else:
                nxt.append(f)
        pending = nxt
        depth += 1
    return out


def copy_source(source: Path, dest: Path, max_mb: float) -> tuple[int, int]:
    """Copy the source tree (no VCS data or build outputs) to ``dest``; (files, bytes) copied."""
    plan: list[tuple[Path, Path]] = []
    total = 0
    for root, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not os.path.islink(os.path.join(root, d)))
        for name in sorted(files):
            src = Path(root) / name
            if name.endswith(SKIP_SUFFIXES) or src.is_symlink() or not src.is_file():
                continue
            total += src.stat().st_size
            plan.append((src, dest / src.relative_to(source)))
            if total > max_mb * 1024 * 1024 or len(plan) > MAX_SOURCE_FILES:
                raise InputError(Problem(str(source), None, (
                    f"source tree too large to copy into a case (more than {max_mb:g} MB or {MAX_SOURCE_FILES} files "
                    f"without {', '.join(sorted(SKIP_DIRS))}); raise --max-source-mb or point --source at the application")))
    if dest.exists():
        shutil.rmtree(guarded(dest))
    for src, dst in plan:
        copy_file(src, dst)
    return len(plan), total


def _incident_dict(f: Found, with_file: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"rule_id": f.inc.rule_id}
    if with_file:
        d["file"] = f.file
    if f.inc.line:
        d["line"] = f.inc.line
    if f.inc.message:
        d["message"] = f.inc.message
    if f.inc.description:
        d["description"] = f.inc.description
    if f.inc.category:
        d["category"] = f.inc.category
    return d


def _rule_tag(rule_id: str) -> str:
    return case_id_for(re.sub(r"-\d+$", "", rule_id))


def import_konveyor(report: Path, source: Path, suite_dir: Path, *, kind: str = "agentic", rules: Path | None = None,
                    name: str | None = None, max_source_mb: float = DEFAULT_MAX_SOURCE_MB) -> ImportResult:
    """Write an agentic or migration suite from an analyzer report; nothing is written when the input is bad."""
    if kind not in KINDS:
        raise InputError(Problem("--kind", None, f"{kind!r}: expected one of {', '.join(KINDS)}"))
    if not source.is_dir():
        raise InputError(Problem(str(source), None, "--source: not a folder (expected the analyzed application's source tree)"))
    source = source.resolve()
    target = suite_dir.resolve()
    if kind == "agentic" and (target == source or source in target.parents or target in source.parents):
        raise InputError(Problem(str(suite_dir), None, "--suite-dir and --source must not contain one another "
                                                       "(the source tree is copied into the suite)"))
    incidents = load_report(report)
    rule_map = load_rules(rules) if rules else {}
    result = ImportResult()
    shown = str(report)

    found: list[Found] = []
    resolved: dict[str, str | None] = {}
    lines_cache: dict[str, list[str]] = {}
    for inc in incidents:
        if inc.uri not in resolved:
            resolved[inc.uri] = resolve(inc.uri, source)
        rel = resolved[inc.uri]
        where = f"{shown}:{inc.report_line}" if inc.report_line else shown
        if rel is None:
            result.warnings.append(f"{where}: {inc.rule_id}: {inc.uri} not found under {source} "
                                   "(no suffix of its path exists there); incident left out")
            continue
        n_lines = len(_file_lines(source, rel, lines_cache))
        if inc.line and inc.line > n_lines:
            result.warnings.append(f"{where}: {inc.rule_id}: line {inc.line} is past the end of {rel} ({n_lines} lines); "
                                   "kept without a line")
            inc.line = None
        found.append(Found(inc, rel))
    if not found:
        raise InputError(Problem(shown, None, f"none of the report's {len(incidents)} incident(s) is in a file under "
                                              f"{source}; is --source the analyzed application?"))

    confine_writes(suite_dir)  # every file this import writes lands below the suite folder it was given
    ensure_dir(suite_dir)
    desc = {"agentic": "Discover and fix every analyzer incident in the application's source tree; each incident is "
                       "an expected task, re-checked after the system's changes with the rule's matcher.",
            "migration": "Migrate each file so that its analyzer incidents are fixed (no expected file: "
                         "reference-based metrics are not applicable)."}[kind]
    suite: dict[str, Any] = {"kind": kind, "language": "java",
             "description": f"Konveyor analyzer incidents imported from {report} (source tree {source.name}). {desc}"}
    atomic_write_text(suite_dir / "suite.yaml", dump_yaml(suite, "Written by `evalkit import konveyor`."))

    by_rule: dict[str, list[Found]] = {}
    for f in found:
        by_rule.setdefault(f.inc.rule_id, []).append(f)
    if kind == "agentic" or rule_map:
        for rule_id, items in by_rule.items():
            matcher, origin = None, "incident"
            if rule_id in rule_map:
                matcher, origin = matcher_from_rule(rule_map[rule_id]), "rule"
            if matcher is None:
                matcher, origin = matcher_from_incidents(items, source, lines_cache), "incident"
            if matcher is None:
                result.warnings.append(f"{shown}: {rule_id}: no matcher could be derived (no rule condition, "
                                       "variables or line text); its incidents cannot be re-checked")
                continue
            result.matchers[rule_id] = matcher
            result.matcher_origin[rule_id] = origin
            for file in dict.fromkeys(f.file for f in items):
                if not matcher_hits(matcher, "\n".join(_file_lines(source, file, lines_cache))):
                    result.warnings.append(f"{shown}: {rule_id}: its {matcher.type} matcher {matcher.pattern!r} does not "
                                           f"find the incident in {file}; a re-check would call it fixed already")
    if kind == "migration" and result.matchers:  # one set for every case of the suite
        suite["defaults"] = {"matchers": {r: m.model_dump(mode="json") for r, m in result.matchers.items()}}
        atomic_write_text(suite_dir / "suite.yaml", dump_yaml(suite, "Written by `evalkit import konveyor`."))
    if kind == "agentic":
        cid = case_id_for(name or source.name)
        case_dir = suite_dir / cid
        copy_source(source, case_dir / "source", max_source_mb)
        rules_fired = sorted(by_rule)
        data = {
            "id": cid,
            "description": f"{len(found)} Konveyor incident(s) of {len(rules_fired)} rule(s) in {name or source.name}",
            "tags": ["konveyor", *dict.fromkeys(_rule_tag(r) for r in rules_fired)],
            "inputs": {
                "source_dir": "source",
                "instructions": "Migrate the application so that the analyzer incidents below are fixed.",
                "incidents": [_incident_dict(f, True) for f in found],
                "matchers": {r: m.model_dump(mode="json") for r, m in result.matchers.items()},
            },
            "reference": {"expected_tasks": [
                {"rule_id": f.inc.rule_id, "file": f.file, **({"line": f.inc.line} if f.inc.line else {})} for f in found]},
        }
        atomic_write_text(case_dir / "case.yaml", dump_yaml(data, f"Imported from {report} by `evalkit import konveyor`."))
        result.written.append(cid)
        result.incidents = len(found)
        return result

    by_file: dict[str, list[Found]] = {}
    for f in found:
        by_file.setdefault(f.file, []).append(f)
    ids = migration_ids(sorted(by_file))
    for file in sorted(by_file):
        items = by_file[file]
        cid = ids[file]
        case_dir = suite_dir / cid
        legacy = f"legacy/{PurePosixPath(file).name}"
        copy_file(source / file, case_dir / legacy)
        rules_fired = list(dict.fromkeys(f.inc.rule_id for f in items))
        data = {
            "id": cid,
            "description": f"{file}: {len(items)} Konveyor incident(s) of {', '.join(rules_fired)}",
            "tags": ["konveyor", *dict.fromkeys(_rule_tag(r) for r in rules_fired)],
            "inputs": {"file_path": file, "legacy_file": legacy, "incidents": [_incident_dict(f, False) for f in items]},
        }
        atomic_write_text(case_dir / "case.yaml", dump_yaml(data, f"Imported from {report} by `evalkit import konveyor`."))
        result.written.append(cid)
        result.incidents += len(items)
    return result
