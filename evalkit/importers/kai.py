"""Kai's existing grades -> a suite, recorded systems and recorded judges (evalkit.recorded_judge).

* ``import_kai_ci(REPORT)``: Konveyor Kai CI's judge report (``kai-ci_report.json``: a list of runs
  ``{date, kaiEvalData: [{file, effectiveness, specificity, reasoning, competency, validCode,
  unnecessaryChanges, averageScore}]}``, or the same rows as ``kai-ci_kai_eval_report.csv``). One
  migration case per judged file; one recorded system per run (``kai-ci-<date>``) whose recorded
  judge holds that run's verdicts on the file, under the shipped rubric ``kai_ci``. A file judged
  several times in one run has several verdicts: their mean (booleans: majority) is the case's score,
  as for a judge asked k times.
* ``import_kai_eval(DIR)``: kai-eval (pranavgaikwad/kai-eval): its test cases (``apps/<app>/test_cases/
  <name>/tc.yaml`` and ``notes.md``) and its results (``**/eval_results.json``: per test case, per
  experiment ``{variant, model, diff, metrics: {completeness, functionalParity, residualEffort:
  {score, reasoning}}}``). One migration case per test case with results; one recorded system per
  (variant, model) whose output is the experiment's diff and whose recorded judge holds its scores and
  reasoning, under the rubric ``kai_eval``.

Neither source holds the legacy code or the analyzer incidents of what was judged: each case carries
a placeholder legacy file saying so and one ``optional`` incident naming the rules (optional incidents
are shown but never counted in incidents_resolved), and the score stage keeps only the judge's metrics
for outputs without the judged file (evalkit.stages.score). The report then shows the imported scores,
per rubric field, with the grader named, beside new runs of the same suite.

Layout written under ``--suite-dir`` (say ``cases/kai-ci``): ``suite.yaml``, ``<case>/case.yaml``,
``<case>/legacy/<file>``, ``_recorded/<system>/<suite>/<case>.json`` (the recorded outputs),
``_recorded/<system>.grades.json`` (the recorded judges) and ``_systems.yaml`` (the systems' entries
for evalkit.yaml; folders and files starting with ``_`` are not cases). Bad input: file:line, exit 2.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from evalkit.errors import InputError, Problem
from evalkit.graders.rubric_config import shipped
from evalkit.importers.konveyor import case_id_for, copy_source, dump_yaml, migration_ids
from evalkit.recorded_judge import RecordedGrades, RecordedVerdict
from evalkit.yamlio import line_of, load_yaml, read_input_text

RECORDED = "_recorded"
SYSTEMS_FILE = "_systems.yaml"
KAI_CI_FIELDS = ("effectiveness", "specificity", "reasoning", "competency", "validCode", "unnecessaryChanges")
CSV_COLUMNS = {"Effectiveness": "effectiveness", "Specificity": "specificity", "Reasoning": "reasoning",
               "Competency": "competency", "Valid Code": "validCode", "Unnecessary Changes": "unnecessaryChanges"}
KAI_EVAL_FIELDS = ("completeness", "functionalParity", "residualEffort")


@dataclass
class Judged:
    """One verdict read from a source, with where it is."""

    file: str
    """What was judged: a file path (Kai CI) or a test case key (kai-eval)."""
    values: dict[str, Any]
    """The rubric's fields."""
    where: str
    """file:line in the source."""
    notes: str = ""
    """The grader's reasoning."""


@dataclass
class KaiImport:
    """What an import wrote."""

    suite: str
    cases: list[str] = field(default_factory=list)
    systems: dict[str, int] = field(default_factory=dict)
    """System -> verdicts recorded."""
    snippet: str = ""
    warnings: list[str] = field(default_factory=list)


def model_slug(model: str) -> str:
    """`ChatBedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0` -> `claude-3-7-sonnet-20250219-v1-0`."""
    last = model.split("/")[-1]
    return re.sub(r"^(?:[a-z]{2}\.)?(?:anthropic|openai|meta|mistral|amazon)\.", "", last)


def _system_name(text: str) -> str:
    return case_id_for(text.lower())[:60].strip("-._")


def _check(rubric_name: str, values: dict[str, Any], shown: str, line: int | None, what: str) -> list[Problem]:
    problems = []
    for f in shipped(rubric_name).fields:
        if f.name not in values or values[f.name] in (None, ""):
            problems.append(Problem(shown, line, f"{what}: {f.name} missing (expected {f.scale_text()})"))
            continue
        try:
            values[f.name] = f.check(values[f.name])
        except ValueError as exc:
            problems.append(Problem(shown, line, f"{what}: {exc}"))
    return problems


# ---- Kai CI ---------------------------------------------------------------------------------------

def read_kai_ci(report: Path, shown: str | None = None) -> list[tuple[str, list[Judged]]]:
    """(run label, verdicts) per run of a Kai CI report (.json: every run; .csv: one run). InputError: file:line."""

    shown = shown or str(report)
    if not report.is_file():
        raise InputError(Problem(shown, None, "Kai CI report not found (expected kai-ci_report.json or its .csv)"))
    problems: list[Problem] = []
    runs: list[tuple[str, list[Judged]]] = []
    if report.suffix.lower() == ".csv":
        text = read_input_text(report, shown)
        rows = list(csv.reader(text.splitlines()))
        if not rows or "File" not in rows[0]:
            raise InputError(Problem(shown, 1, "expected a header row with File, " + ", ".join(CSV_COLUMNS)))
        header = rows[0]
        missing = [c for c in CSV_COLUMNS if c not in header]
        if missing:
            raise InputError(Problem(shown, 1, f"header lacks {', '.join(missing)} (expected File, {', '.join(CSV_COLUMNS)})"))
        verdicts = []
        for n, row in enumerate(rows[1:], start=2):
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                problems.append(Problem(shown, n, f"{len(row)} columns, expected {len(header)} as in the header"))
                continue
            cells = dict(zip(header, row))
            values: dict[str, Any] = {CSV_COLUMNS[c]: cells[c].strip() for c in CSV_COLUMNS}
            bad = _check("kai_ci", values, shown, n, f"row {n - 1}")
            if not cells["File"].strip():
                bad.append(Problem(shown, n, f"row {n - 1}: File is empty (expected the judged file's path)"))
            problems += bad
            if not bad:
                verdicts.append(Judged(cells["File"].strip(), values, f"{shown}:{n}"))
        runs.append((report.stem, verdicts))
    else:
        node = load_yaml(report, shown)  # JSON is YAML: every value keeps its line
        if isinstance(node, dict) and "kaiEvalData" in node:
            node = [node]
        if not isinstance(node, list):
            raise InputError(Problem(shown, 1, "expected a list of runs, each {date, kaiEvalData: [{file, effectiveness, "
                                               "specificity, reasoning, competency, validCode, unnecessaryChanges}]}"))
        for i, run in enumerate(node):
            line = line_of(node, (i,))
            if not isinstance(run, dict) or not isinstance(run.get("kaiEvalData"), list):
                problems.append(Problem(shown, line, f"run {i}: expected {{date, kaiEvalData: [...]}}"))
                continue
            label = str(run.get("date") or f"run-{i + 1}")
            verdicts = []
            for j, row in enumerate(run["kaiEvalData"]):
                rline = line_of(node, (i, "kaiEvalData", j))
                what = f"run {i} ({label}) kaiEvalData[{j}]"
                if not isinstance(row, dict):
                    problems.append(Problem(shown, rline, f"{what}: expected an object with file and the six scores"))
                    continue
                values = {k: row.get(k) for k in KAI_CI_FIELDS}
                bad = _check("kai_ci", values, shown, rline, what)
                if not isinstance(row.get("file"), str) or not row["file"].strip():
                    bad.append(Problem(shown, rline, f"{what}: file missing (expected the judged file's path)"))
                problems += bad
                if not bad:
                    verdicts.append(Judged(row["file"].strip(), values, f"{shown}:{rline}"))
            runs.append((label, verdicts))
    if problems:
        raise InputError(problems)
    return runs


# ---- kai-eval --------------------------------------------------------------------------------------

@dataclass
class EvalCase:
    """A kai-eval test case (tc.yaml) as read."""

    app: str
    name: str
    description: str
    rules: list[str]
    notes: str
    files: list[str]


FILE_ITEM = re.compile(r"^\s*-\s+(\S+\.\w+)\s*$", re.MULTILINE)


def _files_of(description: str) -> list[str]:
    return FILE_ITEM.findall(description or "")


def read_kai_eval(root: Path, shown_root: str | None = None) -> tuple[dict[tuple[str, str], EvalCase],
                                                                      list[tuple[tuple[str, str], dict[str, Any], list[Judged]]]]:
    """kai-eval's test cases by (app, name) and per (app, name) its experiments with their verdicts."""

    shown_root = shown_root or str(root)
    if not root.is_dir():
        raise InputError(Problem(shown_root, None, "kai-eval folder not found (expected apps/<app>/test_cases/*/tc.yaml "
                                                   "and an eval_results.json)"))
    problems: list[Problem] = []
    cases: dict[tuple[str, str], EvalCase] = {}
    for tc in sorted(root.glob("apps/*/test_cases/*/tc.yaml")):
        shown = f"{shown_root}/{tc.relative_to(root)}"
        try:
            node = load_yaml(tc, shown)
        except InputError as exc:
            problems += exc.problems
            continue
        if not isinstance(node, dict) or not isinstance(node.get("name"), str):
            problems.append(Problem(shown, 1, "expected a test case: app, name, description, rules"))
            continue
        rules = [r["rule"] for r in node.get("rules") or [] if isinstance(r, dict) and r.get("rule")]
        notes_file = tc.parent / "notes.md"
        app = str(node.get("app") or tc.parents[2].name)
        cases[(app, node["name"])] = EvalCase(app, node["name"], str(node.get("description") or ""), rules,
                                              notes_file.read_text(encoding="utf-8") if notes_file.is_file() else "",
                                              _files_of(str(node.get("description") or "")))
    results = sorted(root.glob("**/eval_results.json"))
    if not results:
        problems.append(Problem(shown_root, None, "no eval_results.json under this folder (kai-eval's results)"))
    experiments: list[tuple[tuple[str, str], dict[str, Any], list[Judged]]] = []
    for res in results:
        shown = f"{shown_root}/{res.relative_to(root)}"
        node = load_yaml(res, shown)
        if not isinstance(node, dict) or not isinstance(node.get("results"), list):
            problems.append(Problem(shown, 1, "expected {results: [{testCase, experiments: [...]}]}"))
            continue
        for i, result in enumerate(node["results"]):
            line = line_of(node, ("results", i))
            tcase = result.get("testCase") if isinstance(result, dict) else None
            if not isinstance(tcase, dict) or not isinstance(tcase.get("name"), str):
                problems.append(Problem(shown, line, f"results[{i}]: expected testCase {{name, application}}"))
                continue
            app = str((tcase.get("application") or {}).get("name") or "")
            key = (app, tcase["name"])
            if key not in cases:  # results of a test case whose tc.yaml is not in the folder: from the result itself
                desc = str(tcase.get("description") or "")
                cases[key] = EvalCase(app, tcase["name"], desc, [r["rule"] for r in tcase.get("rules") or []
                                                                 if isinstance(r, dict) and r.get("rule")], "",
                                      _files_of(desc))
            for j, exp in enumerate(result.get("experiments") or []):
                eline = line_of(node, ("results", i, "experiments", j))
                what = f"results[{i}] ({app}/{tcase['name']}) experiments[{j}]"
                metrics = exp.get("metrics") if isinstance(exp, dict) else None
                if not isinstance(metrics, dict) or not exp.get("model"):
                    problems.append(Problem(shown, eline, f"{what}: expected {{variant, model, diff, metrics}}"))
                    continue
                values = {k: (metrics.get(k) or {}).get("score") if isinstance(metrics.get(k), dict) else metrics.get(k)
                          for k in KAI_EVAL_FIELDS}
                bad = _check("kai_eval", values, shown, eline, what)
                problems += bad
                if bad:
                    continue
                notes = "\n\n".join(f"{k}: {metrics[k].get('reasoning', '')}".strip() for k in KAI_EVAL_FIELDS
                                    if isinstance(metrics.get(k), dict) and metrics[k].get("reasoning"))
                experiments.append((key, exp, [Judged(f"{app}/{tcase['name']}", values, f"{shown}:{eline}", notes)]))
    if problems:
        raise InputError(problems)
    return cases, experiments


# ---- writing ---------------------------------------------------------------------------------------

def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _write_case(suite_dir: Path, case_id: str, file_path: str, description: str, rules: list[str],
                source: str, tags: list[str]) -> None:
    name = PurePosixPath(file_path).name or "application"
    legacy = f"legacy/{name}"
    _write(suite_dir / case_id / legacy, f"// {source} holds the judge's scores of this change, not the legacy code.\n")
    case = {"id": case_id, "description": description.strip()[:2000], "tags": tags,
            "inputs": {"file_path": file_path, "legacy_file": legacy,
                       "incidents": [{"rule_id": r, "message": f"from {source}: the rule the judged change is about",
                                      "category": "optional"} for r in rules]}}
    _write(suite_dir / case_id / "case.yaml", dump_yaml(case, f"Imported from {source} by evalkit import (a recorded judge's case)."))


def _write_suite(suite_dir: Path, rubric: str, description: str) -> None:
    spec = {"kind": "migration", "language": "java", "rubric": rubric, "description": description,
            "defaults": {"source_technology": "Java EE", "target_technology": "Quarkus"}}
    _write(suite_dir / "suite.yaml", dump_yaml(spec, "Written by evalkit import (a recorded judge's suite)."))


def _finish(out: KaiImport, suite_dir: Path, project: Path, entries: list[dict[str, Any]]) -> KaiImport:
    def rel(p: Path) -> str:
        try:
            return str(p.resolve().relative_to(project.resolve()))
        except ValueError:
            return str(p.resolve())

    systems = []
    for e in entries:
        systems.append({"name": e["name"], "adapter": "recorded", "description": e["description"],
                        "path": rel(suite_dir / RECORDED / e["name"]), "grades": rel(suite_dir / RECORDED / f"{e['name']}.grades.json"),
                        "suites": [out.suite]})
    text = dump_yaml({"systems": systems}, "Recorded systems of this import: add them to evalkit.yaml's systems "
                                           "(paths relative to the project folder)")
    _write(suite_dir / SYSTEMS_FILE, text)
    out.snippet = text
    return out


def _record(suite_dir: Path, suite: str, system: str, case_id: str, sample: dict[str, Any]) -> None:
    _write(suite_dir / RECORDED / system / suite / f"{case_id}.json", json.dumps(sample, indent=1, sort_keys=True) + "\n")


def _fresh(suite_dir: Path) -> None:
    """An import replaces what an earlier import of the same suite wrote (cases, recordings, grades)."""
    if suite_dir.exists():
        if not (suite_dir / "suite.yaml").exists() or "evalkit import" not in (suite_dir / "suite.yaml").read_text(encoding="utf-8"):
            if any(suite_dir.iterdir()):
                raise InputError(Problem(str(suite_dir), None, "folder exists and is not a suite written by evalkit "
                                                               "import; expected a new or earlier-imported suite folder"))
        shutil.rmtree(suite_dir)


def import_kai_ci(report: Path, suite_dir: Path, *, grader: str | None = None, project: Path = Path("."),
                  shown: str | None = None) -> KaiImport:
    """Kai CI's report -> a migration suite, one recorded system and recorded judge per run."""
    runs = read_kai_ci(report, shown)
    _fresh(suite_dir)
    suite = suite_dir.name
    files = sorted({j.file for _, verdicts in runs for j in verdicts})
    ids = migration_ids(files)
    out = KaiImport(suite=suite, cases=[ids[f] for f in files])
    _write_suite(suite_dir, "kai_ci", f"Konveyor Kai CI's judge scores per migrated file, imported from {report.name} "
                                      "(a recorded judge: the report holds scores, not code).")
    for f in files:
        _write_case(suite_dir, ids[f], f, f"Kai CI judged {f}", ["kai-ci-judged-file"], f"Kai CI's {report.name}",
                    ["kai-ci"])
    entries = []
    used: set[str] = set()
    for label, verdicts in runs:
        name = base = _system_name(f"kai-ci-{label}")
        n = 2
        while name in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name)
        by_case: dict[str, list[RecordedVerdict]] = {}
        for j in verdicts:
            by_case.setdefault(f"{suite}/{ids[j.file]}", []).append(RecordedVerdict(values=j.values, where=j.where))
        for key in by_case:
            _record(suite_dir, suite, name, key.split("/", 1)[1],
                    {"text": f"Kai CI ({label}) judged this file; its report holds the judge's scores, not the code."})
        g = RecordedGrades(source=shown or str(report), grader=grader or "Kai CI judge (model not named in the report)",
                           rubric="kai_ci", run=label, cases=dict(sorted(by_case.items())))
        _write(suite_dir / RECORDED / f"{name}.grades.json", g.model_dump_json(indent=1) + "\n")
        out.systems[name] = len(verdicts)
        entries.append({"name": name, "description": f"Kai CI run of {label} (recorded judge: {g.grader})"})
    return _finish(out, suite_dir, project, entries)


def parse_app_map(values: list[str]) -> dict[str, Path]:
    """``--app APP=DIR`` (one application's tree) or ``--app DIR`` (a folder of ``<app>/`` trees) -> app -> tree."""
    out: dict[str, Path] = {}
    for v in values:
        name, sep, folder = v.partition("=")
        if sep:
            if not Path(folder).is_dir():
                raise InputError(Problem("--app", None, f"{v!r}: {folder} is not a folder (expected APP=DIR, the "
                                                        "application's source tree)"))
            out[name] = Path(folder)
        elif Path(v).is_dir():
            out.update({d.name: d for d in sorted(Path(v).iterdir()) if d.is_dir() and not d.name.startswith(".")})
        else:
            raise InputError(Problem("--app", None, f"{v!r} is not a folder (expected APP=DIR or a folder of <app>/ trees)"))
    return out


def _write_agentic_case(suite_dir: Path, case_id: str, tc: EvalCase, tree: Path, max_mb: float) -> None:
    copy_source(tree, suite_dir / case_id / "source", max_mb)
    rules = tc.rules or ["kai-eval-test-case"]
    files = [f for f in tc.files if (tree / f).is_file()] or tc.files
    first = (tc.description.strip().splitlines() or [tc.name])[0]
    case = {"id": case_id, "description": first[:300], "tags": ["kai-eval", tc.app],
            "inputs": {"source_dir": "source",
                       "instructions": tc.description + (f"\n\nDeveloper notes (kai-eval notes.md):\n{tc.notes}" if tc.notes else ""),
                       "incidents": [{"rule_id": rules[0], "file": f, "message": first} for f in files]},
            "reference": {"expected_tasks": [{"rule_id": rules[0], "file": f} for f in files]
                          or [{"rule_id": rules[0], "file": "."}]}}
    _write(suite_dir / case_id / "case.yaml", dump_yaml(case, f"Imported from kai-eval test case {tc.app}/{tc.name} by "
                                                              "evalkit import (agentic: the application tree given with --app)."))


def import_kai_eval(root: Path, suite_dir: Path, *, grader: str | None = None, project: Path = Path("."),
                    shown: str | None = None, apps: dict[str, Path] | None = None, max_mb: float = 50.0) -> KaiImport:
    """kai-eval's test cases and results -> a migration suite (or, with ``apps``, an agentic suite of the test cases
    whose application tree is given), one recorded system and recorded judge per (variant, model)."""
    cases, experiments = read_kai_eval(root, shown)
    judged = sorted({key for key, _, _ in experiments})
    warnings = []
    if apps:
        left = [k for k in judged if k[0] not in apps]
        if left:
            warnings.append(f"no application tree (--app) for {', '.join(sorted({a for a, _ in left}))}: "
                            f"{len(left)} test case(s) left out ({', '.join(f'{a}/{n}' for a, n in left)}); import "
                            "again without --app, into another suite, to keep their recorded scores")
        judged = [k for k in judged if k[0] in apps]
        if not judged:
            raise InputError(Problem("--app", None, f"no test case of the given application(s) {sorted(apps)} has results "
                                                    f"(applications with results: {sorted({k[0] for k, _, _ in experiments})})"))
        experiments = [e for e in experiments if e[0][0] in apps]
    _fresh(suite_dir)
    suite = suite_dir.name
    ids = {key: case_id_for(f"{key[0]}-{key[1]}") for key in judged}
    out = KaiImport(suite=suite, cases=[ids[k] for k in judged], warnings=warnings)
    if apps:
        spec = {"kind": "agentic", "language": "java", "rubric": "kai_eval",
                "description": "kai-eval's test cases on their application trees; outputs are the experiments' diffs, "
                               "graded by kai-eval's recorded judge and re-checked on the tree."}
        _write(suite_dir / "suite.yaml", dump_yaml(spec, "Written by evalkit import (a recorded judge's suite)."))
    else:
        _write_suite(suite_dir, "kai_eval", "kai-eval's test cases with its judge's completeness, functional parity and "
                                            "residual effort per experiment (a recorded judge; outputs are the experiments' diffs).")
    for key in judged:
        tc = cases[key]
        if apps:
            _write_agentic_case(suite_dir, ids[key], tc, apps[key[0]], max_mb)
            continue
        description = tc.description + (f"\n\nDeveloper notes (kai-eval notes.md):\n{tc.notes}" if tc.notes else "")
        _write_case(suite_dir, ids[key], tc.files[0] if tc.files else f"{tc.app}/(application)", description,
                    tc.rules or ["kai-eval-test-case"], f"kai-eval test case {tc.app}/{tc.name}", ["kai-eval", tc.app])
    by_system: dict[str, dict[str, list[RecordedVerdict]]] = {}
    names: dict[str, str] = {}
    for key, exp, verdicts in experiments:
        name = _system_name(f"kai-eval-{exp.get('variant') or 'run'}-{model_slug(str(exp['model']))}")
        names[name] = f"kai-eval {exp.get('variant')} variant with {exp['model']}"
        cid = ids[key]
        sample: dict[str, Any] = {"patch": exp.get("diff") or "",
                                  "text": f"kai-eval experiment: {exp.get('variant')} with {exp['model']}"
                                          + (f"; Kai reported: {exp['error']}" if exp.get("error") else "")}
        _record(suite_dir, suite, name, cid, sample)
        by_system.setdefault(name, {}).setdefault(f"{suite}/{cid}", []).extend(
            RecordedVerdict(values=j.values, where=j.where, notes=j.notes) for j in verdicts)
    entries = []
    for name in sorted(by_system):
        g = RecordedGrades(source=shown or str(root), grader=grader or "kai-eval judge (model not named in eval_results.json)",
                           rubric="kai_eval", run=names[name], cases=dict(sorted(by_system[name].items())))
        _write(suite_dir / RECORDED / f"{name}.grades.json", g.model_dump_json(indent=1) + "\n")
        out.systems[name] = sum(len(v) for v in by_system[name].values())
        entries.append({"name": name, "description": f"{names[name]} (recorded judge: {g.grader})"})
    return _finish(out, suite_dir, project, entries)
