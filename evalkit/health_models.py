"""What case health records: the partial answers (ablations) derived from a case's reference, how the case's
own tests or graders took each, and what leaks from the reference into the tree a system is handed."""

from __future__ import annotations

from typing import Literal

from evalkit.artifacts import Sample
from evalkit.models import Model

Strength = Literal["strong", "weak", "not_measured", "skipped", "infra_error"]


class Ablation(Model):
    """A partial answer a kind derives from a case's reference (evalkit.kinds.base.Kind.ablations)."""

    name: str
    """Short id, stable for the same reference (``without-hunk-2``)."""
    description: str
    """What was left out, in words."""
    sample: Sample
    """The partial answer, as a system would give it."""


class AblationRun(Model):
    """How the case's own tests or graders took one ablation."""

    name: str
    """The ablation's id."""
    description: str
    """What was left out."""
    outcome: Literal["noticed", "passed", "error"]
    """noticed: the case fails the partial answer (as it should); passed: the case accepts it (the tests or the
    reference cannot tell it from the whole answer); error: it could not be checked (the detail says why)."""
    detail: str = ""
    """The failing tests or graders that noticed, or why it could not be checked."""
    container: bool = False
    """It ran in the sandbox (a container with Docker)."""
    infra: bool = False
    """An error of the infrastructure (the sandbox, Docker, the executor), not of the case: the check is redone
    by the next run, and until then the case's strength is not known."""


class CaseHealth(Model):
    """health/<suite>/<case>.json: one case's reference against its own ablations, and its tree's leaks."""

    suite: str
    """Suite name."""
    case_id: str
    """Case id."""
    checked_by: Literal["tests", "reference"] = "tests"
    """What the ablations are checked by: the case's tests (patch) or its graders against its reference."""
    strength: Strength = "not_measured"
    """strong: every ablation was noticed; weak: one or more passed; not_measured: the reference gives no
    partial answer (one change), the kind derives none, or none could be checked (each partial answer's own
    error: it does not apply...); skipped: ablations off, or the reference itself is not valid; infra_error: an
    ablation could not be checked for an infrastructure reason and none passed (redone by the next run)."""
    reason: str = ""
    """The verdict in words (for weak: the ablation that passed)."""
    ablations: list[AblationRun] = []
    """Each ablation checked, in order."""
    derived: int = 0
    """Ablations the kind derived before the cap (`validation.ablations`)."""
    leaks: list[str] | None = None
    """What the tree handed to a system gives away (`.git`, a file holding the reference's post-image);
    None: not checked (the kind hands no tree, or the tree is inside an image)."""
    seconds: float = 0.0
    """Wall time of the ablation checks that ran containers (0 when every check ran on the host: those take
    milliseconds, and a time that differs between two runs of the same inputs would make the report differ)."""

    @property
    def status(self) -> str:
        """The strength, read as a status (an `infra_error` is retried next run)."""
        return self.strength

    @property
    def containers(self) -> int:
        return sum(1 for a in self.ablations if a.container)
