"""One system's panel on a case page: its output, test runs, checks, metrics (and its judge).

A case page holds one panel per system (two of them side by side with ``?compare``), so at
10,000 cases x 4 systems the panel is the hottest piece of the site. It is Python (every value
escaped as markupsafe does, evalkit.report.escaping) rather than a Jinja macro, which cost a third of the render; the judge
and rubric sections stay a Jinja macro (`graded_sections` in macros.html.j2), the part rubric
authors change. `system_view` (case_pages.py) makes the ``v`` dict read here, from the artifact models (every field
present: a model's default where an artifact lacks it).
"""

from __future__ import annotations

from typing import Any, Callable

from jinja2.filters import do_urlencode
from markupsafe import Markup

from evalkit.llm.pricing import Usage
from evalkit.outcomes import SandboxRun
from evalkit.report.escaping import esc
from evalkit.report.site_env import diff_html, metric_rows_html, metric_value, pass_badge, status_badge, test_rows_html

_HARNESS_DIFFERS = (" <strong>differs from evalkit's verdict ({})</strong>: the harness reads the printed log alone; "
                    "evalkit also trusts only nonce-marked exit statuses and the worst status printed for a test. "
                    "The resolved rate uses the harness's verdict, as the leaderboard does.")


def tokens_line(v: dict[str, Any]) -> str:
    """Tokens, cost, time, steps and samples of one system's answer."""
    u: Usage = v["usage"]
    out = [f'<p class="usage">Tokens in / out: <strong>{u.input_tokens:,}</strong> / '
           f'<strong>{u.output_tokens:,}</strong>']
    if u.cache_read_tokens:
        out.append(f' (cache read {esc(format(u.cache_read_tokens, ","))})')
    out.append(f' · cost <strong>${u.cost_usd:.4f}</strong> · time <strong>{v["wall_s"] or 0:.2f} s</strong>')
    if v["steps"] is not None:
        out.append(f" · steps {esc(v['steps'])}")
    if v["samples"] > 1:
        out.append(f" · {esc(v['samples'])} samples (the first is graded)")
    if v["judge_usage"].cost_usd:
        out.append(f' · judge cost ${v["judge_usage"].cost_usd:.4f}')
    out.append("</p>")
    return "".join(out)


def _file(f: dict[str, Any]) -> str:
    name = esc(f["name"])
    out = ['<div class="output">\n']
    if f["diff"]:
        out.append(f"<h4>Output <code>{name}</code>: changes against the legacy code</h4>\n{diff_html(f['diff'])}\n")
    elif f["same_as_legacy"]:
        out.append(f'<h4>Output <code>{name}</code></h4><p class="note">Identical to the legacy code: nothing was '
                   "migrated.</p>\n")
    else:
        out.append(f'<h4>Output <code>{name}</code></h4>\n<pre class="code">{esc(f["content"])}</pre>\n')
    if f["diff_reference"]:
        out.append(f"<details><summary>Against the reference answer</summary>{diff_html(f['diff_reference'])}"
                   "</details>\n")
    elif f["same_as_reference"]:
        out.append(f"<p>{pass_badge(True, 'identical to the reference')}</p>")
    if f["diff"] or f["diff_reference"]:
        out.append(f'<details><summary>Whole file</summary><pre class="code">{esc(f["content"])}</pre></details>')
    out.append("</div>\n")
    return "".join(out)


def _harness(v: dict[str, Any], view: dict[str, Any]) -> str:
    run: SandboxRun = view["run"]
    verdict, resolved = run.harness_resolved, run.resolved
    bad = " bad" if verdict is not None and verdict != resolved else ""
    out = [f'<p class="harness-verdict{bad}" id="harness-{esc(v["name"])}-{esc(view["index"])}">SWE-bench harness '
           f'(<code>{esc(run.harness_parser)}</code>): ']
    note = run.harness_note
    if verdict is None:
        out.append("no verdict" + (f" ({esc(note)})" if note else ""))
    else:
        out.append(str(pass_badge(verdict, "resolved", "not resolved")))
        if verdict != resolved:
            out.append(_HARNESS_DIFFERS.format("resolved" if resolved else "not resolved"))
        if note:
            out.append(f" · {esc(note)}")
    out.append("</p>")
    return "".join(out)


def _run(v: dict[str, Any], view: dict[str, Any]) -> str:
    """One sample's test run: ``view`` holds the run (a SandboxRun) and what the page adds (index, log preview, rows)."""
    run: SandboxRun = view["run"]
    out = ["<h4>Tests"]
    if len(v["runs"]) > 1:
        out.append(f" (sample {view['index'] + 1})")
    out.append(" ")
    if run.resolved is not None:
        out.append(str(pass_badge(run.resolved, "resolved", "not resolved")))
    out.append("</h4>\n<p>")
    if run.status == "tampered_with_tests":
        out.append('<span class="badge s-error">✗ tampered with tests</span> ')
    out.append(str(esc(run.status.replace("_", " "))))
    if run.reason:
        out.append(f": {esc(run.reason)}")
    out.append(f" · isolation {esc(run.isolation or '')}")
    if run.patch_method:
        out.append(f" · applied with <code>{esc(run.patch_method)}</code>")
    if run.duration_s:
        out.append(f" · {run.duration_s:.1f} s")
    out.append("</p>\n")
    if run.harness_parser:
        out.append(_harness(v, view))
    if view["test_rows"]:
        out.append('<div class="scroll"><table class="grid small">\n<caption>Per-test results</caption>\n'
                   '<thead><tr><th scope="col">Test</th><th scope="col">Role</th><th scope="col">Result</th></tr>'
                   f"</thead><tbody>\n{test_rows_html(view['test_rows'])}</tbody></table></div>\n")
    if run.log:
        cut = f": the last {len(view['preview']):,} characters" if view["cut"] else ""
        size = run.log_bytes or len(run.log)
        capped = ", capped by the sandbox" if run.log_truncated else ""
        out.append(f'<details><summary>Log{cut}</summary><pre class="log">{esc(view["preview"])}</pre></details>\n')
        if view["log_file"]:  # the page shows its end: the whole log is a file beside it
            out.append(f'<p><a href="{esc(do_urlencode(view["log_file"]))}">Full log ({size:,} bytes{capped})</a></p>\n')
        elif capped:
            out.append(f"<p>Log capped by the sandbox ({size:,} bytes in all).</p>\n")
    return "".join(out)


def _checks(v: dict[str, Any]) -> str:
    out = []
    syntax = v["syntax"]
    if syntax:
        out.append(f"<p>Parses ({esc(syntax['language'])}): {pass_badge(syntax['valid'], 'yes', 'no')}</p>")
        if syntax["issues"]:
            out.append('<ul class="issues">' + "".join(f"<li><code>{esc(i)}</code></li>" for i in syntax["issues"])
                       + "</ul>")
    if v["assertions"]:
        score = v["assertion_score"]
        out.append('<div class="scroll"><table class="grid small">\n<caption>Assertions'
                   + (f": score {score:.3f}" if score is not None else "") + "</caption>\n"
                   '<thead><tr><th scope="col">Check</th><th scope="col">Result</th><th scope="col">Detail</th></tr>'
                   "</thead><tbody>\n")
        for a in v["assertions"]:
            weight = f' <span class="n">×{esc(a["weight"])}</span>' if a["weight"] != 1 else ""
            out.append(f'<tr><th scope="row">{esc(a["description"])}{weight}</th><td>{pass_badge(a["passed"])}</td>'
                       f'<td class="wrap">{esc(a["detail"])}</td></tr>\n')
        out.append("</tbody></table></div>\n")
    return "".join(out)


def _why(explained: list[dict[str, Any]]) -> str:
    """Why the metrics whose scorers said so have their values (each explanation escaped: a scorer may quote the
    answer, e.g. a file name the system wrote)."""
    rows = "".join(f'<dt data-metric="{esc(m["name"])}">{esc(m["info"].display if m["info"] else m["name"])} '
                   f'{esc(metric_value(m["value"], m["info"]))}</dt><dd>{esc(m["explanation"])}</dd>'
                   for m in explained)
    return f'<dl class="kv why" aria-label="Why the metrics have their values">{rows}</dl>\n'


def system_panel(v: dict[str, Any], graded_sections: Callable[[dict[str, Any]], object]) -> Markup:
    """The panel of system ``v`` (a `system_view`); ``graded_sections``: the Jinja macro for its judge and rubric."""
    out = [f'<h3 id="sys-{esc(v["name"])}">{esc(v["name"])} {status_badge(v["status"], v["excluded"])}</h3>\n']
    if v["reason"]:
        out.append(f'<p class="reason">{esc(v["reason"])}</p>')
    out.append(tokens_line(v) + "\n\n")
    out.extend(_file(f) for f in v["files"])
    if v["patch"]:
        out.append(f"<h4>Patch (against the base tree)</h4>{diff_html(v['patch'])}")
    if v["text"]:
        out.append(f'<h4>Answer text</h4><pre class="code">{esc(v["text"])}</pre>')
    if not v["files"] and not v["patch"] and not v["text"] and v["status"] == "ok":
        out.append('<p class="note">No output.</p>')
    out.append("\n")
    out.extend(_run(v, run) for run in v["runs"])
    out.append("\n")
    out.append(_checks(v))
    out.append("\n")
    if v["judge"] or v["rubric"]:
        out.append(str(graded_sections(v)))
    out.append("\n")
    explained = [m for m in v["metrics"] if m.get("explanation")]
    if explained:
        out.append(_why(explained))
    if v["metrics"]:
        out.append(f"<details><summary>Every metric of this case ({len(v['metrics'])})</summary>\n"
                   f'<table class="grid small"><tbody>\n{metric_rows_html(v["metrics"])}</tbody></table></details>\n')
    if v["stderr"]:
        out.append(f'<details><summary>Standard error of the system</summary><pre class="log">{esc(v["stderr"])}</pre>'
                   "</details>")
    return Markup("".join(out))
