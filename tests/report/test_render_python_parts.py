"""render: the Python functions that replace template loops write what the loops wrote, escaped alike."""

from __future__ import annotations

from evalkit.metrics.registry import METRICS
from evalkit.report import render as R

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
