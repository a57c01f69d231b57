#!/usr/bin/env python3
"""Build an evalkit project from the real Konveyor Kai migration data, the way a Kai team would.

    python3 scripts/kai-real-project.py /tmp/kai-real [--data ../shared/realdata] [--only ID,...]
                                        [--no-quickstarts] [--run] [--summary]

Reads (never copies into this repository) `kai_migration_cases/cases.json`: real Java EE files of
konveyor-ecosystem applications (legacy = main branch, expected = quarkus branch), the analyzer
incidents Kai saw, and for the 22 coolstore files the outputs 8 LLMs produced in Kai's runs. It
writes into the folder given:

- `cases/coolstore/`: one migration case per coolstore file (legacy file, expected file, incidents
  with Konveyor's category); `reference.deleted: true` where the quarkus branch deletes the file;
  the suite's `defaults.matchers` come from the Konveyor rules (`konveyor_rulesets/`, the same
  rule -> matcher translation as `evalkit import konveyor --rules`);
- `cases/quickstarts/`: the 17 files of the other quickstart applications (bmt, cmt, ejb-*,
  helloworld-mdb), which have no LLM outputs: their references are validated too;
- `outputs/<system>/<suite>/<case>.json`: one recorded system per LLM branch, plus `unchanged`
  (the legacy file returned as is);
- `evalkit.yaml`: those systems, `gold` and `empty`, baseline `unchanged`, and `canaries: true` (evalkit's
  canary systems beside them: the release page raises the metric-validity alarm if one ranks with an LLM).

`--run` then runs `evalkit run` on it; `--summary` prints per system and suite migrated, incidents_resolved,
codebleu, codebleu_gain, answered and the broken cases (from the release's report.json) and, as
its last line, the same as one JSON object.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
from pathlib import Path, PurePosixPath

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalkit.importers.konveyor import dump_yaml, load_rules, matcher_from_rule, migration_ids  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "realdata"
SUITE_COOLSTORE = "coolstore"
SUITE_QUICKSTARTS = "quickstarts"
RELEASE = "kai-real"
KAI_CODE = re.compile(r"//[^\n]*|/\*[\s\S]*?(?:\*/|$)")
"""Java comments: an answer holding nothing else is Kai's way of saying "delete this file"."""
SUMMARY_METRICS = ("answered", "migrated", "incidents_resolved", "codebleu", "codebleu_gain", "syntax_valid")


def system_name(branch: str) -> str:
    """A Kai branch name as a system name: `RHOAI-qwen25-coder-32b-instruct` -> `qwen25-coder-32b-instruct`."""
    name = re.sub(r"^RHOAI-", "", branch)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._").lower()


def incident(inc: dict) -> dict:
    out = {"rule_id": inc["rule_id"]}
    for key, src in (("line", "line_number"), ("message", "message"), ("description", "rule_description"),
                     ("category", "category")):
        value = inc.get(src)
        if value not in (None, ""):
            out[key] = value
    return out


WRITTEN: set[Path] = set()


def write(path: Path, text: str) -> None:
    """Write a file unless it already holds ``text`` (a rebuild then reruns nothing)."""
    WRITTEN.add(path)
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def build(dest: Path, data: Path, only: list[str], quickstarts: bool) -> dict[str, list[str]]:
    """Write the project; suite -> case ids written."""
    rows = json.loads((data / "kai_migration_cases" / "cases.json").read_text(encoding="utf-8"))
    rules = load_rules(data / "konveyor_rulesets" / "quarkus_eap8_rules.json")
    suites: dict[str, list[dict]] = {SUITE_COOLSTORE: [], SUITE_QUICKSTARTS: []}
    for row in rows:
        suites[SUITE_COOLSTORE if row["app"] == "coolstore" else SUITE_QUICKSTARTS].append(row)
    if not quickstarts:
        suites.pop(SUITE_QUICKSTARTS)
    written: dict[str, list[str]] = {}
    llm_systems: list[str] = []
    for suite, items in suites.items():
        ids = migration_ids([f"{r['app']}/{r['file_path']}" if suite == SUITE_QUICKSTARTS else r["file_path"]
                             for r in items])
        chosen = []
        for r in items:
            cid = ids[f"{r['app']}/{r['file_path']}" if suite == SUITE_QUICKSTARTS else r["file_path"]]
            if only and not any(fnmatch.fnmatchcase(f"{suite}/{cid}", g) or fnmatch.fnmatchcase(cid, g) for g in only):
                continue
            chosen.append((cid, r))
        if not chosen:
            continue
        rule_ids = sorted({i["rule_id"] for _, r in chosen for i in r["incidents"]})
        matchers = {}
        for rid in rule_ids:
            m = matcher_from_rule(rules[rid]) if rid in rules else None
            if m is not None:  # rules without a text condition: the incident's own line must be gone
                matchers[rid] = m.model_dump(mode="json")
        apps = sorted({r["app"] for _, r in chosen})
        spec = {
            "kind": "migration", "language": "java",
            "description": (f"Real Java EE -> Quarkus files of konveyor-ecosystem {', '.join(apps)} (legacy: main branch, "
                            "expected: quarkus branch) with the Konveyor analyzer incidents Kai saw; matchers from "
                            "konveyor/rulesets. Data: ../shared/realdata/kai_migration_cases (read by "
                            "scripts/kai-real-project.py)."),
            "defaults": {"source_technology": "Java EE", "target_technology": "Quarkus", "matchers": matchers},
        }
        suite_dir = dest / "cases" / suite
        write(suite_dir / "suite.yaml", dump_yaml(spec, "Written by scripts/kai-real-project.py from the real Kai data."))
        for cid, r in chosen:
            name = PurePosixPath(r["file_path"]).name
            case_dir = suite_dir / cid
            write(case_dir / "legacy" / name, r["legacy_code"])
            reference: dict = {}
            if r.get("expected_missing") or r.get("expected_code") is None:
                reference["deleted"] = True
            else:
                write(case_dir / "expected" / name, r["expected_code"])
                reference["expected_file"] = f"expected/{name}"
            case = {
                "id": cid,
                "description": (f"{r['app']}: {r['file_path']} ({r['source_repo']} {r['initial_branch']}@"
                                f"{r['initial_commit'][:12]} -> {r['solved_branch']}@{r['solved_commit'][:12]})"
                                + (" - deleted in the target branch" if reference.get("deleted") else "")),
                "tags": [r["app"], *dict.fromkeys(re.sub(r"-\d+$", "", i["rule_id"]) for i in r["incidents"])]
                        + (["deleted-in-target"] if reference.get("deleted") else []),
                "inputs": {"file_path": r["file_path"], "legacy_file": f"legacy/{name}",
                           "incidents": [incident(i) for i in r["incidents"]]},
                "reference": reference,
            }
            write(case_dir / "case.yaml", dump_yaml(case, "Written by scripts/kai-real-project.py from the real Kai data."))
            answers = {"unchanged": r["legacy_code"]}
            for cand in r.get("generated_candidates") or []:
                if cand.get("generated_code") is not None:
                    answers[system_name(cand["branch"])] = cand["generated_code"]
            for sname, code in answers.items():
                if sname != "unchanged" and sname not in llm_systems:
                    llm_systems.append(sname)
                # Kai's prompt: "If the file should be removed, make the content of the updated file a
                # comment explaining it should be removed": such an answer is a deletion.
                answer = {"files": {r["file_path"]: code}} if KAI_CODE.sub("", code).strip() else \
                    {"deleted_files": [r["file_path"]], "text": code}
                write(dest / "outputs" / sname / suite / f"{cid}.json", json.dumps(answer, ensure_ascii=False))
            written.setdefault(suite, []).append(cid)
    llm_suites = [s for s in written if s == SUITE_COOLSTORE]
    systems = [{"name": s, "adapter": "recorded", "path": f"outputs/{s}", "suites": llm_suites,
                "description": f"Kai's recorded output of branch {s} (konveyor-ecosystem/coolstore)"} for s in llm_systems]
    systems.append({"name": "unchanged", "adapter": "recorded", "path": "outputs/unchanged", "suites": list(written),
                    "description": "The legacy file returned unchanged (a migration that does nothing)"})
    systems += [{"name": "gold", "adapter": "gold", "suites": list(written)},
                {"name": "empty", "adapter": "empty", "suites": list(written)}]
    config = {"release": RELEASE, "title": "Kai real data: Java EE -> Quarkus, 8 LLMs", "baseline": "unchanged",
              "suites": list(written), "systems": systems, "canaries": True}  # evalkit's canaries beside them
    write(dest / "evalkit.yaml", dump_yaml(config, "Written by scripts/kai-real-project.py."))
    for sub in ("cases", "outputs"):  # files of an earlier build that this one did not write
        for root, dirs, files in os.walk(dest / sub, topdown=False):
            for f in files:
                if Path(root, f) not in WRITTEN:
                    os.unlink(Path(root, f))
            if not os.listdir(root):
                os.rmdir(root)
    return written


def run(dest: Path) -> None:
    env = {**os.environ, "EVALKIT_CONFIG": str(dest / "evalkit.yaml")}
    env.pop("EVALKIT_RELEASE", None)
    env.pop("EVALKIT_SELECT", None)
    proc = subprocess.run([sys.executable, "-m", "evalkit", "run", "-n", "2"], cwd=str(dest), env=env)
    if proc.returncode != 0:
        raise SystemExit(f"evalkit run exited {proc.returncode}")


def summary(dest: Path) -> dict:
    report = json.loads((dest / "site" / RELEASE / "report.json").read_text(encoding="utf-8"))
    out: dict = {}
    for suite in report["suites"]:
        rows = {}
        for sname, aggs in suite["systems"].items():
            rows[sname] = {m: (aggs[m]["value"] if m in aggs else None) for m in SUMMARY_METRICS}
            rows[sname]["n"] = max((a["n"] for a in aggs.values()), default=0)
        out[suite["name"]] = {"systems": rows, "broken": suite["broken"]}
    return out


def print_summary(s: dict) -> None:
    for suite, body in s.items():
        print(f"\n## {suite}")
        print(f"{'system':34} {'n':>3} " + " ".join(f"{m:>18}" for m in SUMMARY_METRICS))
        for name, row in sorted(body["systems"].items(), key=lambda kv: (-(kv[1]["migrated"] or -1), -(kv[1]["incidents_resolved"] or -1))):
            cells = " ".join(f"{'-' if row[m] is None else format(row[m], '.3f'):>18}" for m in SUMMARY_METRICS)
            print(f"{name:34} {row['n']:>3} {cells}")
        for b in body["broken"]:
            print(f"  broken: {b}")
    print(json.dumps(s, sort_keys=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dest", type=Path, help="folder of the project to write (e.g. /tmp/kai-real)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the realdata folder (default: ../shared/realdata)")
    ap.add_argument("--only", default="", help="comma-separated case ids or suite/id globs to keep (default: all)")
    ap.add_argument("--no-quickstarts", action="store_true", help="only the coolstore suite")
    ap.add_argument("--run", action="store_true", help="run `evalkit run` on the project")
    ap.add_argument("--summary", action="store_true", help="print the per-system figures of the run")
    args = ap.parse_args(argv)
    if not (args.data / "kai_migration_cases" / "cases.json").is_file():
        print(f"kai-real-project: {args.data}/kai_migration_cases/cases.json not found (give --data)", file=sys.stderr)
        return 2
    only = [g.strip() for g in args.only.split(",") if g.strip()]
    written = build(args.dest.resolve(), args.data.resolve(), only, not args.no_quickstarts)
    if not written:
        print(f"kai-real-project: no case matches --only {args.only}", file=sys.stderr)
        return 2
    print(f"kai-real-project: wrote {sum(map(len, written.values()))} case(s) "
          f"({', '.join(f'{s}: {len(c)}' for s, c in written.items())}) to {args.dest}")
    if args.run:
        run(args.dest.resolve())
    if args.summary:
        print_summary(summary(args.dest.resolve()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
