"""render: the Python functions that replace template loops write what the loops wrote, escaped alike."""

from __future__ import annotations

import pytest

from evalkit.metrics.registry import METRICS
from evalkit.report import render as R
from evalkit.report.models import CaseCell, CaseRow
from evalkit.report.site_env import case_list_rows_html

P = '<script>"x"&\'y\'</script>'


def test_test_rows_metric_rows_and_diffs_match_the_template_loops() -> None:
    env = R.environment()
    rows = [{"id": P, "role": "FAIL_TO_PASS", "status": s, "missing": m, "flaky": f}
            for s in ("passed", "failed", "error", "skipped", P) for m in (True, False) for f in (True, False)]
    loop = env.from_string(
        '{% for t in rows %}<tr><th scope="row"><code>{{ t.id }}</code></th><td>{{ t.role }}</td><td>'
        '{% if t.status == "passed" %}{{ pass_badge(true, "passed") }}{% elif t.status in ("failed", "error") %}'
        '{{ pass_badge(false, t.status) }}{% else %}<span class="badge s-skipped">– {{ t.status }}</span>{% endif %}'
        '{% if t.missing %} (not in the output){% endif %}{% if t.flaky %} <span class="badge s-infra_error">⚠ flaky'
        '</span>{% endif %}</td></tr>\n{% endfor %}')
    assert loop.render(rows=rows) == str(R.test_rows_html(rows))
    metrics = [{"name": n, "info": METRICS.get(n), "value": v}
               for n in ("answered", "codebleu", "cost_usd", P) for v in (None, 0, 1.0, 0.37, 5)]
    loop = env.from_string(
        '{% for m in metrics %}<tr><th scope="row">{% if m.info %}<abbr title="{{ m.info.description }}">'
        '{{ m.info.display }}</abbr>{% else %}{{ m.name }}{% endif %}</th><td class="num" data-metric="{{ m.name }}" '
        'data-value="{{ m.value | raw }}">{{ metric_value(m.value, m.info) }}</td></tr>\n{% endfor %}')
    assert loop.render(metrics=metrics) == str(R.metric_rows_html(metrics))
    lines = [("add", P), ("ctx", ""), (P, "x")]
    loop = env.from_string('<pre class="diff">{% for cls, line in lines %}<span class="{{ cls }}">{{ line }}\n'
                           '</span>{% endfor %}</pre>')
    assert loop.render(lines=lines) == str(R.diff_html(lines))
    assert "<script>" not in str(R.test_rows_html(rows)) + str(R.metric_rows_html(metrics)) + str(R.diff_html(lines))


CASE_LIST_LOOP = (  # suite.html.j2's case list before evalkit.report.site_env.case_list_rows_html
    '{% for row in rows %}\n'
    '<tr><th scope="row"><a href="../cases/{{ row.suite | urlencode }}/{{ row.case_id | urlencode }}.html">{{ row.case_id }}</a>{% if row.problems %} <span class="badge s-broken">⊘ broken</span>{% endif %}{% if row.tags %}<div class="desc">{{ row.tags | join(", ") }}</div>{% endif %}</th>\n'
    '{% for sname in suite.systems %}{% set cell = row.systems.get(sname) %}\n'
    '<td>{% if cell %}{{ status_badge(cell.status, cell.excluded) }}{% if primary and cell.metrics.get(primary) is not none %} <span class="pm" data-system="{{ sname }}" data-metric="{{ primary }}" data-value="{{ cell.metrics[primary] | raw }}">{{ metric_value(cell.metrics[primary], report.metric_info[primary]) }}</span>{% endif %}{% else %}–{% endif %}</td>\n'
    '{% endfor %}\n'
    '<td>{% if row.systems | length >= 2 %}<a href="../cases/{{ row.suite | urlencode }}/{{ row.case_id | urlencode }}.html?compare#systems">compare</a>{% endif %}</td></tr>\n'
    '{% endfor %}\n'
)


@pytest.mark.parametrize("primary", ["resolved", "codebleu", "cost_usd", None])
def test_a_suite_pages_case_list_matches_the_template_loop(primary: str | None) -> None:
    """Rows with hostile ids, suites, tags and statuses, broken cases, missing cells and metrics, one and several
    systems: the Python rows are the loop's bytes."""
    env = R.environment()
    systems = ["a", P, "c d"]
    rows = []
    for i, (suite, case_id) in enumerate([("patch", "case-1"), (P, P), ("s p", "ü/ä?#x"), ("patch", "c" * 3)]):
        cells = {}
        for j, name in enumerate(systems[: 1 + i % 3]):
            metrics = {} if (i + j) % 4 == 0 else {"resolved": float((i + j) % 2), "codebleu": 0.37 * j or None,
                                                   "cost_usd": 0.0123 * j}
            cells[name] = CaseCell(status=[P, "ok", "error", "timeout"][(i + j) % 4], metrics=metrics,
                                   excluded=P if j == 2 else None)
        rows.append(CaseRow(suite=suite, case_id=case_id, tags=[P, "x"][: i % 3], problems=[P] if i == 1 else [],
                            systems=cells))
    info = {m: METRICS[m] for m in ("resolved", "codebleu", "cost_usd")}
    expected = env.from_string(CASE_LIST_LOOP).render(rows=rows, suite={"systems": systems}, primary=primary,
                                                      report={"metric_info": info})
    got = str(case_list_rows_html(rows, systems, primary, info))
    assert got == expected
    assert "<script>" not in got and 'compare#systems' in got and "⊘ broken" in got and "–" in got
