"""evalkit's models are built on first use, once, whichever threads use them first (evalkit.models._Deferred)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from pydantic import ValidationError
from pydantic._internal import _model_construction

from evalkit.models import Model, OpenModel


def test_a_process_that_starts_evalkit_builds_no_report_model() -> None:
    """Importing the CLI (what every `evalkit` process does) leaves the report's models unbuilt: they were ~0.1 s
    of every process when built at import."""
    code = ("import json, evalkit.cli\n"
            "from evalkit.report.models import Report, CaseDetail\n"
            "from evalkit.config import Config\n"
            "print(json.dumps([Report.__pydantic_complete__, CaseDetail.__pydantic_complete__]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout) == [False, False]


@pytest.mark.parametrize("base", [Model, OpenModel])
def test_concurrent_first_uses_build_the_model_once_and_validate_right(base: type, monkeypatch: pytest.MonkeyPatch
                                                                       ) -> None:
    """Eight threads use a model for the first time at once, its build slowed to 0.3 s so that they overlap: it is
    built once, and every thread validates with the model's own rules (a wrong type is rejected; a strict model
    rejects an unknown key, an open one keeps it), never with a half-built class's."""
    builds: list[str] = []
    real = _model_construction.complete_model_class

    def slow_build(cls: type, *args: object, **kwargs: object) -> bool:
        builds.append(cls.__name__)
        time.sleep(0.3)
        return real(cls, *args, **kwargs)  # type: ignore[arg-type]

    class Verdict(base):  # type: ignore[misc, valid-type]
        score: float
        label: str

    class Judged(base):  # type: ignore[misc, valid-type]
        verdict: Verdict
        case: str

    assert not Judged.__pydantic_complete__ and not Verdict.__pydantic_complete__
    monkeypatch.setattr(_model_construction, "complete_model_class", slow_build)
    start = threading.Barrier(8)
    results: list[object] = [None] * 8

    def use(i: int) -> None:
        start.wait()
        try:
            good = Judged.model_validate({"verdict": {"score": "0.5", "label": "ok"}, "case": f"c{i}", "extra": i})
            results[i] = ("ok", good.verdict.score, getattr(good, "extra", None))
        except ValidationError as exc:
            results[i] = ("invalid", sorted(e["type"] for e in exc.errors()))
        try:
            Judged.model_validate({"verdict": {"score": "high", "label": "ok"}, "case": "c"})
            results[i] = (results[i], "accepted a wrong type")
        except ValidationError:
            pass

    threads = [threading.Thread(target=use, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert builds.count("Judged") == 1, builds
    if base is Model:
        assert results == [("invalid", ["extra_forbidden"])] * 8
    else:
        assert results == [("ok", 0.5, i) for i in range(8)]
