"""The `evalkit` command: check, run, schema, serve, compare (estimate is cli/estimate.py; import and rejudge come from their modules)."""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NoReturn, cast

from evalkit import envfail
from evalkit.errors import InputError, Problem
from evalkit.llm.keys import seal
from evalkit.llm.settings import configured
from evalkit.run_status import DOIT_FAILED_EXIT, environment_verdict, pending_retries, verdict
from evalkit.runlock import LOCKED_EXIT, ProjectLocked, project_lock
from evalkit.termtext import terminal_safe
from evalkit.config import load_config
from evalkit.fsutil import atomic_write_bytes, confine_writes
import evalkit.tasks as tasks
from evalkit import noop_gate, uptodate_manifest
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit import checks as checks_code
    from evalkit import checks_deep as checks_deep_code
    from evalkit.executors import cluster as cluster_code
    from evalkit.report import compare_page as compare_page_code
    from evalkit import interrupted as interrupted_code
    from evalkit import progress
    from evalkit import schemas as schemas_code
    from evalkit.importers import swebench as swebench_code
    from evalkit import run_images
    from evalkit.sandbox import budget as container_budget
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    checks_code = later("evalkit.checks")
    checks_deep_code = later("evalkit.checks_deep")
    cluster_code = later("evalkit.executors.cluster")
    compare_page_code = later("evalkit.report.compare_page")
    interrupted_code = later("evalkit.interrupted")
    progress = later("evalkit.progress")
    schemas_code = later("evalkit.schemas")
    swebench_code = later("evalkit.importers.swebench")
    run_images = later("evalkit.run_images")
    container_budget = later("evalkit.sandbox.budget")

COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def command(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None] = lambda p: None):
    def deco(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        COMMANDS[name] = (help, configure, fn)
        return fn

    return deco


def config_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="evalkit.yaml to use (default: $EVALKIT_CONFIG or ./evalkit.yaml)")


@command("check", "validate evalkit.yaml and every suite and case; list every problem (exit 2 if any)", config_arg)
def cmd_check(args: argparse.Namespace) -> int:
    problems, summary = checks_code.check_project(args.config)
    for p in problems:
        print(p, file=sys.stderr)
    errors = [p for p in problems if not checks_deep_code.is_warning(p)]  # warnings are printed; only errors fail
    if errors:
        print(f"evalkit check: {len(errors)} problem(s)", file=sys.stderr)
        return 2
    warned = len(problems) - len(errors)
    print(f"evalkit check: ok ({summary}{f'; {warned} warning(s)' if warned else ''})")
    return 0


def _run_args(p: argparse.ArgumentParser) -> None:
    config_arg(p)
    p.add_argument("--select", "-s", action="append", default=[],
                   help="only cases matching SUITE/CASE-GLOB (repeatable); others keep their results")
    p.add_argument("--jobs", "-n", type=int, default=None,
                   help="tasks in parallel (threads; default: the CPU count, or 16 with --cluster: calls in flight); "
                        "sandbox.containers caps the containers among them")
    p.add_argument("--cluster", metavar="tcp://HOST:PORT", default=None,
                   help="run generate, execute and grade calls on this Dask scheduler's workers (same as "
                        "EVALKIT_CLUSTER; executor: {cluster: {address: ...}} in evalkit.yaml)")
    p.add_argument("--release", help="release label (overrides the config; same as EVALKIT_RELEASE)")
    p.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=DIR",
                   help="where a patch case's `owner/name` repository is on this machine (repeatable; adds to "
                        "sandbox.repos and EVALKIT_REPOS)")
    p.add_argument("--retry-judge-errors", action="store_true",
                   help="ask the judge again where its answer stayed unusable after the repair request "
                        "(judge_error); plain reruns keep them")
    p.add_argument("--retry-bugs", action="store_true",
                   help="redo the stages that hit an evalkit bug (status bug) even though evalkit's code is unchanged "
                        "(they are redone anyway once it changes)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress display and no summary table (failures are still reported)")
    p.add_argument("--wait", action="store_true",
                   help="when another run of this project is going, wait for it to end instead of refusing "
                        "(exit 7)")
    p.add_argument("--strict", action="store_true",
                   help="exit 8 when the metric-validity alarm is raised: a suite's headline lets a canary (an answer "
                        "doing no real work) score at or above gold or a real system")
    p.add_argument("doit_args", nargs="*", help="extra arguments for doit (task names, ...)")


@command("run", "run the evaluation with doit (only what changed is redone)", _run_args)
def cmd_run(args: argparse.Namespace) -> int:
    if args.config:
        os.environ["EVALKIT_CONFIG"] = str(Path(args.config).resolve())
    if args.select:
        os.environ["EVALKIT_SELECT"] = ",".join(args.select)
    if args.release:
        os.environ["EVALKIT_RELEASE"] = args.release
    if args.retry_judge_errors:
        os.environ["EVALKIT_RETRY_JUDGE_ERRORS"] = "1"
    if args.retry_bugs:
        os.environ["EVALKIT_RETRY_BUGS"] = "1"
    if args.cluster:
        os.environ["EVALKIT_CLUSTER"] = args.cluster
    if args.repo:

        mapped = swebench_code.parse_repo_map(args.repo)  # bad or missing folders: exit 2 naming the option
        os.environ["EVALKIT_REPOS"] = ",".join([*filter(None, [os.environ.get("EVALKIT_REPOS", "")]),
                                                *(f"{k}={v}" for k, v in mapped.items())])

    try:
        work = load_config().work_path
    except InputError:
        return _run_locked(args)  # the graph's loading reports the problems (exit 2); nothing is written
    try:
        with project_lock(work, wait=args.wait, notify=lambda msg: print(f"evalkit: {msg}", file=sys.stderr)):
            return _run_locked(args)
    except ProjectLocked as exc:
        print(f"evalkit: {exc}", file=sys.stderr)
        print(f"evalkit: exit status {LOCKED_EXIT}: the project is locked by another run", file=sys.stderr)
        return LOCKED_EXIT


def default_jobs(cores: int) -> int:
    """`evalkit run`'s parallel tasks without `--jobs`: one per core (a task mostly waits on a container or a
    system's process; the container budget, not this, bounds the containers)."""
    return max(1, cores)


def _run_locked(args: argparse.Namespace) -> int:
    """`evalkit run` once this process holds the project's lock (`evalkit.runlock`)."""
    try:
        module = {"DOIT_CONFIG": tasks.doit_config(), **{k: getattr(tasks, k) for k in dir(tasks) if k.startswith("task_")}}
    except SystemExit as exc:
        return int(exc.code or 2)
    run_cfg = tasks.graph().cfg
    if run_cfg.executor_name == "cluster":  # no address: exit 2 naming where to give one, before any task

        cluster_code.cluster_address(run_cfg.executor_settings)
    if args.jobs is None:  # on a cluster, doit's threads are the calls in flight; here, the machine's cores
        args.jobs = 16 if run_cfg.executor_name == "cluster" else default_jobs(container_budget.cpu_count())
    container_budget.configure(run_cfg.sandbox.containers, run_cfg.sandbox.memory_mb)
    argv = ["run"] + (["-n", str(args.jobs), "-P", "thread"] if args.jobs > 1 else []) + list(args.doit_args)

    mode = progress.mode_for(args.quiet)  # live on a terminal, doit's lines otherwise, nothing with -q
    kinds = {name: suite.kind for name, suite in tasks.graph().loaded.project.suites.items()}
    classes = progress.system_classes(run_cfg.systems)  # a canary's class is its variant
    setups = progress.setups_for(judged=configured(run_cfg.judge))  # without a judge no rag grade imports ragas
    limits = progress.sandbox_limits(tasks.graph().loaded.project.cases)  # where a hung sandbox task ends
    module["DOIT_CONFIG"] = {**module["DOIT_CONFIG"],
                             "reporter": progress.reporter_for(mode, args.jobs, kinds, classes, setups, limits)}
    cfg = tasks.graph().cfg
    envfail.clear()
    os.environ["EVALKIT_RUN_ID"] = f"{os.getpid()}.{time.time_ns()}"  # evalkit.llm.client: in-run de-dup
    run_cases = tasks.graph().run_cases()
    images_before = run_images.before_run(cfg, run_cases)  # the images it needs, with sizes, for the report
    with interrupted_code.run_marker(cfg.work_path, cfg.site_path):  # sweeps what a killed run left half-written
        code, noop_paths, unmarked = _doit_unless_noop(module, argv, args, cfg.work_path)
    noop = noop_paths is not None
    run_images.after_run(cfg, images_before)  # record their use; evict over sandbox.image_store_gb
    tty = sys.stdout.isatty()
    key = None if args.doit_args else uptodate_manifest.end_key(cfg.work_path, (args.strict, mode, tty))
    kept = uptodate_manifest.kept_end(cfg.work_path, key) if noop and key is not None else None
    if kept is not None:  # a no-op: the end of the run that left the manifest, said again
        retries, summary = kept.retries, kept.summary
    else:
        pairs = tasks.graph().pair_ids()
        retries = pending_retries(cfg.work_path, pairs, unmarked)
        summary = progress.summary_text(cfg.site_path, cfg.release, retries) if mode != "quiet" and not tty else None
    if mode != "quiet":  # one row per suite x system, from report.json (kept as printed when not on a terminal)
        if summary is not None:
            sys.stdout.write(summary)
        else:
            progress.print_summary(cfg.site_path, cfg.release, retries=retries)

    def say(line: str) -> None:
        sys.stderr.write(_said(line))

    status, lines = environment_verdict(envfail.recorded())
    if status:  # the machine failed the run (disk full, ...): said plainly, whatever doit made of it
        for line in lines:
            say(line)
        return status
    if code != 0:  # doit's own failure or a failed task (doit printed which): one code for all of them
        say(f"exit status {DOIT_FAILED_EXIT}: doit failed (status {code})")
        return DOIT_FAILED_EXIT
    if kept is not None:
        status, lines = kept.status, kept.lines
        if noop_paths is not None and (mode == "quiet" or summary is not None):  # the next such no-op: noop_gate
            noop_gate.noop_said(cfg.path, str(cfg.work_path), noop_paths, (summary or "") if mode != "quiet" else "",
                                "".join(_said(line) for line in lines))
    else:
        status, lines = verdict(cfg.work_path, cfg.site_path / cfg.release / "report.json", pairs, strict=args.strict,
                                whole_run=not args.doit_args, retries=retries, unmarked=unmarked)
        if key is not None:
            uptodate_manifest.keep_end(cfg.work_path, key, uptodate_manifest.RunEnd(summary, retries, status, lines))
    for line in lines:
        say(line)
    return status


def _said(line: str) -> str:
    """A line of `evalkit run`'s end as stderr shows it."""
    return f"evalkit: {terminal_safe(line)}\n"


def _doit_unless_noop(module: dict[str, object], argv: list[str], args: argparse.Namespace,
                      work: Path) -> tuple[int, list[str] | None, frozenset[str]]:
    """doit's run of ``module`` (its exit status), skipped when nothing changed since a run after which doit would
    find every task up to date (then the manifest's paths: a no-op; else None), and limited to the tasks a change
    reaches when the others are known up to date (`evalkit.uptodate_manifest`); a successful run records what doit
    would find up to date for the next. Third: the targets of the tasks a limited run left out (`Plan.left_out`)."""
    from doit.cmd_base import ModuleTaskLoader  # deferred: doit, only when tasks run
    from doit.doit_cmd import DoitMain  # deferred: doit, only when tasks run

    if args.doit_args:  # some tasks only, or doit's own options: doit decides, and no manifest is saved
        noop_gate.stop()
        uptodate_manifest.forget(work)
        return DoitMain(ModuleTaskLoader(module)).run(argv), None, frozenset()
    config = cast("dict[str, object]", module["DOIT_CONFIG"])
    dep_file = str(config["dep_file"])
    try:
        plan = uptodate_manifest.plan(module, dep_file, ("strict", args.strict))
    except Exception:  # a task creator's error: doit calls the creators again and reports it, as it always has
        noop_gate.stop()
        uptodate_manifest.forget(work)
        return DoitMain(ModuleTaskLoader(module)).run(argv), None, frozenset()
    before = plan.stats()
    reporter = cast(type, config["reporter"])
    if plan.unchanged_since_last_noop(work, before):
        if progress.is_live(reporter):  # the display's last frame: every task up to date
            progress.show_up_to_date(reporter, plan.action_names())
        return 0, plan.paths, frozenset()
    noop_gate.stop()  # not a no-op: what this process reads and prints no longer matters to the gate
    load = plan.affected(work, before)  # None: every task
    plan.task_digests()  # before doit loads the dicts (it renames them in place)
    if load is not None and progress.is_live(reporter):  # the display counts the tasks left out as up to date
        reporter = progress.with_every_task(reporter, plan.action_names())
    uptodate_manifest.forget(work)  # a run that fails or is killed leaves none
    tally = uptodate_manifest.Tally()
    run_module = plan.module if load is None else plan.limited_module(load)
    run_config = cast("dict[str, object]", run_module["DOIT_CONFIG"])
    run_module["DOIT_CONFIG"] = {**run_config, "reporter": uptodate_manifest.counting_reporter(reporter, tally)}
    code = DoitMain(ModuleTaskLoader(run_module)).run(argv) if load is None or load else 0
    if code == 0 and tally.failed == 0 and tally.ignored == 0 and not envfail.recorded():
        plan.save(work, before, tally, load, dep_file, str(config.get("backend", "dbm")))
    return code, None, plan.left_out(load)


def _schema_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default=None, help="folder to write the schemas to (default: the package's schemas/, "
                                               "evalkit's own kinds only); a folder given gets a case schema of every "
                                               "registered kind, installed packages' too")


@command("schema", "write JSON Schemas of case, suite, config and report files", _schema_args)
def cmd_schema(args: argparse.Namespace) -> int:
    for path in schemas_code.write_schemas(Path(args.out) if args.out else None, own_only=not args.out):
        print(path)
    return 0


def _serve_args(p: argparse.ArgumentParser) -> None:
    config_arg(p)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--dir", default=None, help="folder to serve (default: the config's site_dir)")


@command("serve", "serve the report site on http://127.0.0.1:PORT/", _serve_args)
def cmd_serve(args: argparse.Namespace) -> int:
    import functools  # deferred: only for `evalkit serve`
    import http.server  # deferred: http.server, only for `evalkit serve`

    if args.dir:
        site = Path(args.dir)
    else:

        site = load_config(args.config).site_path
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler) as httpd:
        print(f"evalkit: serving {site} at http://127.0.0.1:{httpd.server_address[1]}/ (Ctrl-C to stop)")
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


def _compare_args(p: argparse.ArgumentParser) -> None:
    config_arg(p)
    p.add_argument("a", help="the older release (compared with)")
    p.add_argument("b", help="the newer release")
    p.add_argument("--site", default=None, help="site folder (default: the config's site_dir)")


@command("compare", "compare two releases of the site: site/compare/A..B.html, per case what changed", _compare_args)
def cmd_compare(args: argparse.Namespace) -> int:
    tdir = cache = None
    if args.site:
        site = Path(args.site)
    else:

        cfg = load_config(args.config)
        site = cfg.site_path
        tdir = cfg.resolve(cfg.templates_dir) if cfg.templates_dir else None
        cache = cfg.template_cache
    if not (site / "manifest.json").exists() and not any(site.glob("*/report.json")):
        raise InputError(Problem(str(site), None, "no report site here (no manifest.json, no <release>/report.json); "
                                 "run `evalkit run` first or pass --site"))
    confine_writes(site, *([cache] if cache else []))
    page = compare_page_code.render_comparison(site, args.a, args.b, tdir, cache)
    c = compare_page_code.counts(compare_page_code.ReleaseComparison.model_validate_json(page.with_suffix(".json").read_bytes()))
    print(f"evalkit compare {args.a}..{args.b}: {c['worse']} case(s) worse, {c['better']} better, "
          f"{c['status_changes']} status change(s), {c['added']} added, {c['removed']} removed -> open "
          f"{os.path.relpath(page)}")
    return 0


def _load_plugins() -> None:
    """Commands defined in other modules register themselves on import."""
    import importlib  # deferred: only when plug-in commands load

    for module in ("evalkit.cli.estimate", "evalkit.cli.init", "evalkit.importers.cli", "evalkit.graders.rejudge_cmd"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module and not module.startswith(str(exc.name)):
                raise


def main(argv: list[str] | None = None) -> int:
    seal()  # API keys out of this process's environment (and of everything it starts), before any work
    # ragas reads it at import, which may happen in a task thread: set here, before any thread, as changing
    # os.environ while another thread's HTTP client iterates it (requests' proxy lookup) raises there
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    given = sys.argv[1:] if argv is None else argv
    if not given or given[0] not in COMMANDS:  # a command of this module (`run`) needs none of the others' modules
        _load_plugins()
    parser = argparse.ArgumentParser(prog="evalkit", description="Evaluate AI coding assistants, release after release.")
    sub = parser.add_subparsers(dest="command", required=True)
    commands = {name: sub.add_parser(name, help=help_text, description=help_text)
                for name, (help_text, _configure, _fn) in sorted(COMMANDS.items())}
    for name, command_parser in commands.items():
        COMMANDS[name][1](command_parser)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said with the command's own usage (the top one lists only the commands this call loaded)
        commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return COMMANDS[args.command][2](args)
    except InputError as exc:
        for p in exc.problems:
            print(f"evalkit: {p}", file=sys.stderr)
        return 2


def entry() -> NoReturn:
    """The console script and `python -m evalkit`: `main()`, then exit without tearing down.

    A run of a large project leaves hundreds of thousands of objects (doit's task graph) that
    the interpreter would free one by one at exit: a quarter of a second on 12,000 tasks, paid
    after all the work is done and the database is saved. Output is flushed and the atexit
    hooks (temporary folders' cleanup, logging) run as usual; only the freeing is skipped.
    Under a profiler, coverage or a debugger the exit is the normal one.
    """
    code = main()
    gate = noop_gate.gate_for(code)  # a no-op that said its kept end: the next one is answered before evalkit's imports
    if gate is not None:
        try:
            atomic_write_bytes(*gate)
        except OSError:  # a read-only project: no gate, the next no-op takes the whole path
            pass
    if sys.getprofile() is not None or sys.gettrace() is not None:
        raise SystemExit(code)  # a profiler, coverage or a debugger writes its results at exit
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)
