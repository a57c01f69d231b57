"""Any two releases compared: site/compare/<a>..<b>.html.

The per-metric changes are summarize's `release_diff` (the same rule that fills report.json's
`diff` against the previous release), applied to any pair; this module adds what a diff of one
report does not hold: cases present in only one release, systems present in only one, and cells
whose status moved (ok -> error, ...). The page groups the changes per system like the
regressions page (`render.regression_groups`) and links every case to its page in both releases.

`evalkit compare A B` writes it for any pair; `render` writes it for the previous release and
this one with each release.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from evalkit.errors import InputError, Problem
from evalkit.fsutil import atomic_write_text
from evalkit.models import Model
from evalkit.report import charts
from evalkit.report.models import ReleaseDiff, Report
from evalkit.report.page_data import load_report, regression_groups
from evalkit.report.release_diff import release_diff
from evalkit.report.site import list_releases
from evalkit.lazy_modules import later

if TYPE_CHECKING:  # the real modules, for the type checkers
    from evalkit.report import site_env as site_env_code
else:  # loaded on first use (evalkit.lazy_modules): planning tasks needs only the declarations
    site_env_code = later("evalkit.report.site_env")


class StatusChange(Model):
    """One system on one case whose status differs between the two releases."""

    suite: str
    """Suite name."""
    case_id: str
    """Case id."""
    system: str
    """System name."""
    before: str
    """Status in release a."""
    after: str
    """Status in release b."""


class ReleaseComparison(Model):
    """site/compare/<a>..<b>.json: what changed from release a to release b."""

    a: str
    """The older release (the one compared with)."""
    b: str
    """The newer release."""
    diff: ReleaseDiff
    """Per system, the cases whose headline metrics got better or worse (summarize's rule)."""
    status_changes: list[StatusChange] = []
    """Cells whose status moved (ok / error / timeout / ...)."""
    added: list[str] = []
    """Cases (suite/case) only in release b."""
    removed: list[str] = []
    """Cases (suite/case) only in release a."""
    systems_added: list[str] = []
    """Systems only in release b."""
    systems_removed: list[str] = []
    """Systems only in release a."""


class Moved(NamedTuple):
    """What the release's own pages found already (evalkit.report.release_pages): the diff against the previous
    release (`evalkit.report.release_diff.current_diff`), its `regression_groups` after `largest_first`, and how
    many cases moved."""

    diff: ReleaseDiff
    groups: list[dict[str, Any]]
    n_cases: int


def compare_reports(a: Report, b: Report, diff: ReleaseDiff | None = None) -> ReleaseComparison:
    """What changed from report ``a`` to report ``b`` (any two releases, either order).

    ``diff``: the metric moves from ``a`` to ``b`` when the caller has them (`current_diff`: checked against ``a``'s
    report.json); else computed from both reports (``b.diff`` may predate a rerun of ``a``)."""

    if diff is None or diff.previous_release != a.release:
        diff = release_diff(a, b.cases)
    old = {(r.suite, r.case_id): r for r in a.cases}
    new = {(r.suite, r.case_id): r for r in b.cases}
    status: list[StatusChange] = []
    for key in sorted(old.keys() & new.keys()):
        for system, cell in sorted(new[key].systems.items()):
            before = old[key].systems.get(system)
            if before is not None and before.status != cell.status:
                status.append(StatusChange(suite=key[0], case_id=key[1], system=system,
                                           before=before.status, after=cell.status))
    a_sys, b_sys = {s.name for s in a.systems}, {s.name for s in b.systems}
    return ReleaseComparison(
        a=a.release, b=b.release, diff=diff, status_changes=status,
        added=[f"{s}/{c}" for s, c in sorted(new.keys() - old.keys())],
        removed=[f"{s}/{c}" for s, c in sorted(old.keys() - new.keys())],
        systems_added=sorted(b_sys - a_sys), systems_removed=sorted(a_sys - b_sys))


PAGE_ROWS = 100  # cases per system and direction on the page (and status changes, added, removed)


def _largest_move(entry: dict[str, Any]) -> float:
    """A case's largest metric change (binary flips count 1), for ordering the page's rows."""
    return max((abs(c.after - c.before) for c in entry["changes"] if c.after is not None and c.before is not None),
               default=0.0)


def cases_moved(groups: list[dict[str, Any]]) -> int:
    """How many cases `regression_groups` lists, each once however many systems or metrics moved (before
    `largest_first` keeps the first rows of each group)."""
    return len({(e["suite"], e["case_id"]) for g in groups for k in ("regressed", "improved") for e in g[k]})


def largest_first(groups: list[dict[str, Any]], limit: int = PAGE_ROWS) -> None:
    """Order each `regression_groups` group's worse and better cases by their largest move and keep the
    first ``limit`` (``n_regressed`` / ``n_improved`` keep the counts): a page stays readable and under
    1 MB whatever the number of cases that moved."""
    for g in groups:
        for key in ("regressed", "improved"):
            g[f"n_{key}"] = len(g[key])
            g[key] = sorted(g[key], key=_largest_move, reverse=True)[:limit]


def compare_page_path(site: Path, a: str, b: str) -> Path:
    return Path(site) / "compare" / f"{a}..{b}.html"


def check_releases(site: Path, a: str, b: str) -> None:
    """Both releases exist under ``site`` and differ; else InputError naming what is there."""
    known = list_releases(site)
    problems: list[Problem] = []
    for r in (a, b):
        if r not in known:
            problems.append(Problem(f"{site}/{r}/report.json", None, f"no such release (releases on this site: "
                                                                    f"{', '.join(known) or 'none'})"))
    if not problems and a == b:
        problems.append(Problem("compare", None, f"the two releases are the same ({a}); name two different releases"))
    if problems:
        raise InputError(problems)


def render_comparison(site: Path, a: str, b: str, tdir: Path | None = None,
                      cache_dir: Path | None = None, loaded: Report | None = None, moved: Moved | None = None) -> Path:
    """Write site/compare/<a>..<b>.html and its JSON; returns the page. ``loaded``: the report of ``a`` or ``b`` as
    the caller read it already (render_release has the release's own: at 10,000 cases, reading it again cost as
    much as the rest of this page). ``moved``: the moves from ``a`` to ``b`` as the release's regressions page
    found them (the same diff and rows on both pages, found once)."""

    site = Path(site)
    check_releases(site, a, b)
    ra = loaded if loaded is not None and loaded.release == a else load_report(site, a)
    rb = loaded if loaded is not None and loaded.release == b else load_report(site, b)
    if moved is not None and moved.diff.previous_release == a and rb.release == b:
        comp = compare_reports(ra, rb, moved.diff)
        groups, n_cases = moved.groups, moved.n_cases
    else:
        comp = compare_reports(ra, rb)
        keys: dict[str | None, set[tuple[str, str]]] = {r.release: {(c.suite, c.case_id) for c in r.cases}
                                                       for r in (ra, rb)}  # each row has its page
        groups = regression_groups(site, rb, comp.diff, lambda rel, suite, cid: (suite, cid) in keys.get(rel, ()))
        n_cases = cases_moved(groups)
        largest_first(groups, PAGE_ROWS)  # past PAGE_ROWS the JSON beside the page has the rest
    metric_info = {**ra.metric_info, **rb.metric_info}
    page = compare_page_path(site, a, b)
    env = site_env_code.environment(tdir, cache_dir)
    html = env.get_template("compare_releases.html.j2").render(
        comp=comp, groups=groups, metric_info=metric_info, root="../", here="compare_releases",
        releases=list_releases(site), palette=charts.colours([s.name for s in rb.systems]),
        n_changed=n_cases, limit=PAGE_ROWS)
    atomic_write_text(page.with_suffix(".json"), comp.model_dump_json())
    atomic_write_text(page, html)
    return page


def counts(comp: ReleaseComparison) -> dict[str, int]:
    """Cases worse, better, added, removed (a case counts once however many systems or metrics moved)."""
    worse = {(c.suite, c.case_id) for d in comp.diff.systems.values() for c in d.regressed}
    better = {(c.suite, c.case_id) for d in comp.diff.systems.values() for c in d.improved}
    return {"worse": len(worse), "better": len(better), "added": len(comp.added), "removed": len(comp.removed),
            "status_changes": len(comp.status_changes)}
