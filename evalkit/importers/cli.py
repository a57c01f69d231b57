"""`evalkit import <source>` (one subcommand per source, `SOURCES`) and `evalkit swebench-report`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import argparse
import sys
from pathlib import Path

from evalkit.cli import command, config_arg
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.swebench import grade as grade_code
    from evalkit.importers import kai as kai_code
    from evalkit.importers import konveyor as konveyor_code
    from evalkit.importers import llmservice as llmservice_code
    from evalkit.importers import swebench as swebench_code
    from evalkit.importers import swebench_report as swebench_report_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    grade_code = later("evalkit.swebench.grade")
    kai_code = later("evalkit.importers.kai")
    konveyor_code = later("evalkit.importers.konveyor")
    llmservice_code = later("evalkit.importers.llmservice")
    swebench_code = later("evalkit.importers.swebench")
    swebench_report_code = later("evalkit.importers.swebench_report")


def _swebench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("instances", help="SWE-bench instances (4.x or 5.x rows): a JSON list, a JSONL file or the "
                                     "dataset's parquet file")
    p.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=PATH_OR_URL",
                   help="take the rows of this repository (repeatable; rows of repos not mapped, without --tree, are "
                        "skipped); cases record OWNER/NAME and the run maps it again (evalkit run --repo)")
    p.add_argument("--tree-in-image", default=None, metavar="DIR", const="/testbed", nargs="?",
                   help="use SWE-bench's environment images: the tree is in the image at DIR (default /testbed), the "
                        "image is the row's (5.x) or sweb.eval.x86_64.<id>:latest under sandbox.swebench_namespace, "
                        "and the row's eval script runs the tests; every row is taken")
    p.add_argument("--tree", action="append", default=[], metavar="INSTANCE_ID=DIR",
                   help="a plain source folder (e.g. an unpacked PyPI sdist) to use as that row's tree at its "
                        "base_commit when no clone is available (repeatable); it is copied into the case, which is "
                        "tagged unverified-tree: only that the gold and test patches apply to it is checked")
    p.add_argument("--suite-dir", required=True, help="suite folder to write (e.g. cases/swebench-lite)")
    p.add_argument("--image", default=None, help="container image the tests run in (default: evalkit's python-pytest image)")
    p.add_argument("--test-command", default=None,
                   help="test runner; the files the test patch touches are appended "
                        "(default: python3 -m pytest -rA -p no:cacheprovider)")


def _konveyor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", help="Konveyor analyzer report (output.yaml: rulesets -> violations -> incidents)")
    p.add_argument("--source", dest="source_dir", required=True, help="the analyzed application's source tree (incident files are found in it)")
    p.add_argument("--suite-dir", required=True, help="suite folder to write (e.g. cases/coolstore)")
    p.add_argument("--kind", choices=("agentic", "migration"), default="agentic",
                   help="agentic: one case for the application with its source tree (default); "
                        "migration: one case per file with incidents")
    p.add_argument("--rules", default=None, help="Konveyor rules (a folder of rule YAML files, one file, or a JSON list) "
                                                 "to derive the re-check matchers from; default: derived from the incidents")
    p.add_argument("--name", default=None, help="case id of the agentic case (default: the source folder's name)")
    p.add_argument("--max-source-mb", type=float, default=50.0,
                   help="refuse to copy a source tree larger than this (build outputs and .git excluded; default 50)")


def _llmservice_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("datasets", nargs="+", metavar="DATASET_DIR",
                   help="LLMService dataset folders (each holds <folder>.json, definitions/, models/, tests/)")
    p.add_argument("--suite-dir", required=True, metavar="DIR",
                   help="cases folder to write: each dataset becomes the generation suite DIR/<dataset folder>")
    p.add_argument("--test-ids", nargs="+", default=None, metavar="ID",
                   help="import only these test ids (e.g. test_001 test_003, or comma separated)")
    p.add_argument("--command", dest="generator_command", default=None, metavar="CMD",
                   help="the team's generator, for the system entry written to DIR/llmservice-systems.yaml "
                        "(default: python3 llmservice_generator.py)")
    p.add_argument("--system-name", default="llmservice", help="name of that system entry (default: llmservice)")


def _kai_args(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("kai_source", metavar="SOURCE", help=what)
    p.add_argument("--suite-dir", required=True, metavar="DIR",
                   help="suite folder to write (e.g. cases/kai-ci): cases, recorded outputs and judges under DIR/_recorded, "
                        "the systems' entries for evalkit.yaml in DIR/_systems.yaml")
    p.add_argument("--grader", default=None, help="name of the judge that gave the grades (e.g. gpt-4o) when the "
                                                  "source does not name it")
    p.add_argument("--project", default=".", help="project folder the systems' paths are written relative to "
                                                  "(default: the current folder)")
    if "kai-eval" not in what:
        p.add_argument("--rows", choices=("repeats", "separate"), default="repeats",
                       help="a file's several rows in one run: repeat verdicts of one judgement, averaged into one case "
                            "(repeats, the default: a suite mean is a mean of per-file means) or one case each "
                            "(separate: a suite mean pools the rows)")
    if "kai-eval" in what:
        p.add_argument("--app", action="append", default=[], metavar="APP=DIR",
                       help="an application's source tree (repeatable; or DIR holding <app>/ trees): its test cases "
                            "become agentic cases on a copy of the tree, the recorded diffs applied to it")


SOURCES = ("swebench", "konveyor", "kai-ci", "kai-eval", "llmservice")
"""What `evalkit import` reads, one subcommand each (its help names them all)."""


def _import_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="source", required=True, metavar="SOURCE")
    _swebench_args(sub.add_parser("swebench", help="SWE-bench task instances -> a patch suite",
                                  description="Make a patch suite from SWE-bench task instances."))
    _konveyor_args(sub.add_parser("konveyor", help="a Konveyor analyzer report -> an agentic or migration suite",
                                  description="Make an agentic or migration suite from a Konveyor analyzer output.yaml."))
    _kai_args(sub.add_parser("kai-ci", help="Konveyor Kai CI's judge report -> a suite and recorded judges",
                             description="Bring Kai CI's judge scores (kai-ci_report.json, or its .csv) into evalkit as "
                                         "recorded systems with a recorded judge (rubric kai_ci), one per run."),
              "Kai CI report: kai-ci_report.json (runs of per-file scores) or kai-ci_kai_eval_report.csv")
    _kai_args(sub.add_parser("kai-eval", help="kai-eval's test cases and results -> a suite and recorded judges",
                             description="Bring kai-eval's test cases (tc.yaml, notes.md) and results (eval_results.json: "
                                         "diffs and judge scores) into evalkit as recorded systems with a recorded judge "
                                         "(rubric kai_eval), one per variant and model."),
              "kai-eval folder (apps/<app>/test_cases/*/tc.yaml and an eval_results.json below it)")
    _llmservice_args(sub.add_parser("llmservice", help="LLMService evaluation datasets -> generation suites",
                                    description="Make one generation suite per LLMService dataset folder (criteria, "
                                                "expected files, prompt-injection checks, input files) and a command "
                                                "system entry for the team's generator."))


@command("import", f"make a suite from another benchmark's or tool's files ({', '.join(SOURCES)})", _import_args)
def cmd_import(args: argparse.Namespace) -> int:
    if args.source == "swebench":

        repos = swebench_code.parse_repo_map(args.repo)
        trees = swebench_code.parse_tree_map(args.tree)
        result = swebench_code.import_swebench(Path(args.instances), repos, Path(args.suite_dir), image=args.image,
                                 test_command=args.test_command, trees=trees, tree_in_image=args.tree_in_image)
        for repo, ids in sorted(result.skipped.items()):
            print(f"evalkit import: skipped {len(ids)} instance(s) of {repo} (no --repo {repo}=PATH_OR_URL): "
                  f"{', '.join(ids)}", file=sys.stderr)
        for warning in result.warnings:
            print(f"evalkit import: warning: {warning}", file=sys.stderr)
        if result.unverified:
            print(f"evalkit import: {len(result.unverified)} case(s) use a --tree folder not verified to be their "
                  f"base_commit (tagged unverified-tree): {', '.join(result.unverified)}", file=sys.stderr)
        print(f"evalkit import: wrote {len(result.written)} case(s) to {args.suite_dir}")
        return 0
    if args.source == "konveyor":

        kres = konveyor_code.import_konveyor(Path(args.report), Path(args.source_dir), Path(args.suite_dir), kind=args.kind,
                               rules=Path(args.rules) if args.rules else None, name=args.name,
                               max_source_mb=args.max_source_mb)
        for warning in kres.warnings:
            print(f"evalkit import: warning: {warning}", file=sys.stderr)
        by_type = {t: sum(1 for m in kres.matchers.values() if m.type == t) for t in ("import", "regex")}
        matchers = (f", {len(kres.matchers)} matcher(s) ({by_type['import']} import, {by_type['regex']} regex)"
                    if args.kind == "agentic" else "")
        print(f"evalkit import: wrote {len(kres.written)} {args.kind} case(s) with {kres.incidents} incident(s)"
              f"{matchers} to {args.suite_dir}")
        return 0
    if args.source in ("kai-ci", "kai-eval"):

        if args.source == "kai-ci":
            kai = kai_code.import_kai_ci(Path(args.kai_source), Path(args.suite_dir), grader=args.grader,
                                project=Path(args.project), shown=args.kai_source, rows=args.rows)
        else:

            kai = kai_code.import_kai_eval(Path(args.kai_source), Path(args.suite_dir), grader=args.grader,
                                  project=Path(args.project), shown=args.kai_source, apps=kai_code.parse_app_map(args.app))
        for warning in kai.warnings:
            print(f"evalkit import: warning: {warning}", file=sys.stderr)
        print(f"evalkit import: wrote {len(kai.cases)} case(s) to {args.suite_dir} and {len(kai.systems)} recorded "
              f"system(s) with a recorded judge ({', '.join(f'{k}: {v} verdict(s)' for k, v in kai.systems.items())}); "
              f"add their entries ({Path(args.suite_dir) / kai_code.SYSTEMS_FILE}) to evalkit.yaml:\n{kai.snippet}", end="")
        return 0
    if args.source == "llmservice":

        lres = llmservice_code.import_llmservice([Path(d) for d in args.datasets], Path(args.suite_dir), test_ids=args.test_ids,
                                 command=args.generator_command, system_name=args.system_name)
        for warning in lres.warnings:
            print(f"evalkit import: warning: {warning}", file=sys.stderr)
        for suite, ids in lres.suites.items():
            print(f"evalkit import: {suite}: {len(ids)} case(s) -> {Path(args.suite_dir) / suite}")
        n = sum(len(ids) for ids in lres.suites.values())
        print(f"evalkit import: wrote {len(lres.suites)} generation suite(s), {n} case(s), {lres.criteria} criteria, "
              f"{lres.assertions} assertion(s); system entry for the generator "
              f"({Path(args.suite_dir) / llmservice_code.SNIPPET_FILE}):\n{lres.snippet}", end="")
        return 0
    raise AssertionError(args.source)  # pragma: no cover - argparse restricts the choices


def _report_args(p: argparse.ArgumentParser) -> None:
    config_arg(p)
    p.add_argument("--system", required=True, help="system whose execution results to write")
    p.add_argument("--suite", action="append", default=[], help="only these patch suites (repeatable; default: all)")
    p.add_argument("--out", required=True, help="report.json to write (SWE-bench's per-instance shape)")


@command("swebench-report", "write a system's patch results as SWE-bench report.json", _report_args)
def cmd_swebench_report(args: argparse.Namespace) -> int:
    report, missing = swebench_report_code.write_system_report(args.config, args.system, Path(args.out), args.suite or None)
    if missing:
        print(f"evalkit swebench-report: {len(missing)} case(s) have no execution.json yet (run `evalkit run`): "
              f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}", file=sys.stderr)
    resolved = sum(1 for r in report.values() if r["resolved"])
    print(f"evalkit swebench-report: {resolved}/{len(report)} resolved -> {args.out}")
    return 0


def _swebench_tool_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    g = sub.add_parser("grade", help="re-grade saved harness logs with the official harness (no container)",
                       description="Re-grade SWE-bench harness logs (DIR/<instance_id>/test_output.txt) with the "
                                   "installed swebench package's own parsers and grading; write report.json.")
    g.add_argument("instances", help="SWE-bench instances (4.x or 5.x rows): a JSON list or a JSONL file")
    g.add_argument("--logs", required=True, metavar="DIR", help="folder of DIR/<instance_id>/test_output.txt")
    g.add_argument("--out", required=True, metavar="REPORT", help="report.json to write (SWE-bench's per-instance shape)")
    g.add_argument("--predictions", default=None, metavar="FILE",
                   help="predictions (instance_id, model_patch, model_name_or_path); only their instances are "
                        "graded, a null model_patch is patch_is_None (default: every instance, patch present)")


@command("swebench", "SWE-bench tools: `swebench grade` re-grades saved harness logs", _swebench_tool_args)
def cmd_swebench(args: argparse.Namespace) -> int:
    res = grade_code.grade_command(Path(args.instances), Path(args.logs), Path(args.out),
                        Path(args.predictions) if args.predictions else None)
    for what, ids in (("no log (expected DIR/<instance_id>/test_output.txt)", res.missing_logs),
                      ("no prediction", res.no_prediction), ("an unreadable log", res.unreadable),
                      ("a log in no format evalkit knows (neither the harness's test_output.txt markers nor "
                       "evalkit's sandbox log)", res.unrecognized)):
        if ids:
            print(f"evalkit swebench grade: {len(ids)} instance(s) with {what}, not in the report: "
                  f"{', '.join(ids[:10])}{' ...' if len(ids) > 10 else ''}", file=sys.stderr)
    resolved = sum(1 for r in res.report.values() if r.get("resolved"))
    infra = sum(1 for r in res.report.values() if r.get("infra_failure"))
    print(f"evalkit swebench grade: {resolved}/{len(res.report)} resolved"
          f"{f', {infra} flagged infra_failure' if infra else ''} -> {args.out}")
    return 2 if res.unrecognized else 0  # bad input: never graded "patch not applied" in silence
