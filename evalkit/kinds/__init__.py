"""Suite kinds: one module each (patch, migration, generation, rag, agentic, e2e), registered through the
``evalkit.kinds`` entry-point group (evalkit's own in pyproject.toml), each exporting ``KIND``, a
``evalkit.kinds.base.Kind``. ``kind(name)`` (``evalkit.kind_registry``, re-exported here) is the one way code
outside this package learns what a suite kind does; the engine imports it from ``evalkit.kind_registry``."""

from __future__ import annotations

# The metric registry first: while it loads it asks evalkit's kinds which a judge rubric grades (rubric_config.
# judged_kinds), loading them; a kind module must not then find this package, or kinds.base, half loaded.
import evalkit.metrics.registry  # noqa: F401
from evalkit.kind_registry import UNKNOWN, code_stamp, kind, kinds, known, names, template_dirs
from evalkit.kinds.base import Kind

__all__ = ["UNKNOWN", "Kind", "kind", "kinds", "known", "names", "template_dirs", "code_stamp"]
