"""A Kai-like application migrator with two switches: `agents` and `solution_server` (a real program, no model).

It migrates Python applications off removed or deprecated standard-library APIs (the demo's
agentic and e2e suites), the way Kai migrates JavaEE applications off javax APIs:

- without agents it turns every incident of the analysis report into a task, as reported (false
  positives included), and applies one-line rewrites; changes that need more than that (the `imp`
  loader) it leaves alone and asks for help;
- with agents it checks each reported incident against the code (dropping false positives), scans
  the tree for incidents the analyzer missed, rewrites multi-line code, and, in an e2e loop, reads
  the failing tests' output and repairs one failure per iteration;
- with the solution server it knows fixes from earlier solved migrations: `html.escape(s,
  quote=False)` keeps cgi's output, and versions compare without a third-party package.

Settings arrive in the case JSON (`system.settings`); a matrix in evalkit.yaml expands the four
combinations into four systems.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from evalkit.demo_systems.protocol import answer, read_case

# rule id -> what identifies its incident on one line (the migrator's own knowledge of the rules)
KNOWN = {
    "python-collections-abc-00010": re.compile(r"^from collections import .*\b(Mapping|MutableMapping|Sequence|Iterable|Callable)\b"),
    "python-cgi-removed-00010": re.compile(r"^import cgi$"),
    "python-cgi-escape-00020": re.compile(r"\bcgi\.escape\("),
    "python-imp-removed-00030": re.compile(r"^import imp$"),
    "python-distutils-removed-00040": re.compile(r"^from distutils\.version import"),
    "python-locale-deprecated-00050": re.compile(r"\bgetdefaultlocale\("),
}

IMPORTLIB_LOADER = ("{indent}spec = importlib.util.spec_from_file_location({name}, {path})\n"
                    "{indent}{var} = importlib.util.module_from_spec(spec)\n"
                    "{indent}spec.loader.exec_module({var})")
RELEASE_KEY = '''

def _release_key(version):
    return tuple(int(part) for part in version.split("."))
'''


class Migrator:
    def __init__(self, tree: Path, agents: bool, solution_server: bool) -> None:
        self.tree, self.agents, self.solution_server = tree, agents, solution_server
        self.files: dict[str, str] = {}
        self.steps = 0
        self.help_requests = 0

    def read(self, rel: str) -> str:
        if rel not in self.files:
            self.files[rel] = (self.tree / rel).read_text(encoding="utf-8")
        return self.files[rel]

    def changed(self) -> dict[str, str]:
        return {rel: text for rel, text in self.files.items() if text != (self.tree / rel).read_text(encoding="utf-8")}

    # ---- discovery ------------------------------------------------------------------------------
    def discover(self, incidents: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not self.agents:
            self.steps += 1
            return [{"rule_id": i["rule_id"], "file": i["file"], "line": i.get("line"),
                     "description": "fix as reported"} for i in incidents if i.get("file")]
        tasks, seen = [], set()
        self.steps += 1  # plan
        for inc in incidents:  # verify what the analyzer reported
            self.steps += 1
            rx = KNOWN.get(inc["rule_id"])
            lines = self.read(inc["file"]).splitlines() if inc.get("file") and (self.tree / inc["file"]).is_file() else []
            line = lines[inc["line"] - 1] if inc.get("line") and inc["line"] <= len(lines) else ""
            if rx is None or rx.search(line):
                tasks.append({"rule_id": inc["rule_id"], "file": inc["file"], "line": inc.get("line"),
                              "description": "reported and confirmed"})
                seen.add((inc["rule_id"], inc["file"], inc.get("line")))
        for path in sorted(self.tree.rglob("*.py")):  # look for what it missed
            rel = path.relative_to(self.tree).as_posix()
            if rel.startswith("tests/"):
                continue
            for n, line in enumerate(self.read(rel).splitlines(), 1):
                for rule, rx in KNOWN.items():
                    if rx.search(line) and (rule, rel, n) not in seen:
                        seen.add((rule, rel, n))
                        tasks.append({"rule_id": rule, "file": rel, "line": n, "description": "found by scanning the tree"})
        self.steps += 1
        return tasks

    # ---- fixes ----------------------------------------------------------------------------------
    def sub(self, rel: str, pattern: str, repl: str | Callable[[re.Match[str]], str], flags: int = re.M) -> None:
        self.files[rel] = re.sub(pattern, repl, self.read(rel), flags=flags)

    def fix(self, task: dict[str, Any]) -> None:
        rule, rel = task["rule_id"], task["file"]
        self.steps += 1 + int(self.solution_server)  # the lookup in the solution server is a step
        if rule == "python-collections-abc-00010":
            self.sub(rel, r"^from collections import ", "from collections.abc import ")
        elif rule in ("python-cgi-removed-00010", "python-cgi-escape-00020"):
            self.sub(rel, r"^import cgi$", "import html")
            if self.solution_server:
                self.sub(rel, r"\bcgi\.escape\(([^()]*)\)", r"html.escape(\1, quote=False)")
            else:
                self.sub(rel, r"\bcgi\.escape\(", "html.escape(")
        elif rule == "python-imp-removed-00030":
            if not self.agents:
                self.help_requests += 1  # a multi-line rewrite: beyond a one-line fix
                return
            self.sub(rel, r"^import imp$", "import importlib.util")
            self.sub(rel, r"^(\s*)(\w+) = imp\.load_source\(([^,]+), ([^)]+)\)$",
                     lambda m: IMPORTLIB_LOADER.format(indent=m.group(1), var=m.group(2), name=m.group(3), path=m.group(4)))
        elif rule == "python-distutils-removed-00040":
            if self.solution_server:
                self.release_key(rel)
            else:
                self.sub(rel, r"^from distutils\.version import LooseVersion$",
                         "from packaging.version import Version as LooseVersion")
        elif rule == "python-locale-deprecated-00050":
            self.sub(rel, r"\bgetdefaultlocale\(", "getlocale(")
        else:
            self.help_requests += 1

    def release_key(self, rel: str) -> None:
        self.sub(rel, r"^from (distutils\.version|packaging\.version) import .*\n", "")
        if "_release_key" not in self.read(rel):
            self.sub(rel, r'\A("""[^\n]*"""\n)', lambda m: m.group(1) + RELEASE_KEY)
        self.sub(rel, r"key=LooseVersion", "key=_release_key")

    # ---- e2e feedback ---------------------------------------------------------------------------
    def repair(self, feedback: dict[str, Any]) -> None:
        """Read the failing tests' output and repair one failure (agents only)."""
        self.steps += 1
        if not self.agents:
            self.help_requests += 1
            return
        log = feedback.get("log", "")
        for path in sorted(self.tree.rglob("*.py")):
            rel = path.relative_to(self.tree).as_posix()
            if rel.startswith("tests/"):
                continue
            text = self.read(rel)
            if "html.escape(" in text and "quote=False" not in text and "&quot;" in log:
                self.sub(rel, r"\bhtml\.escape\(([^(),]*)\)", r"html.escape(\1, quote=False)")
                return
            if "packaging.version" in text and "packaging" in log:
                self.release_key(rel)
                return
            for rule, rx in KNOWN.items():  # anything still legacy
                if any(rx.search(line) for line in text.splitlines()):
                    self.fix({"rule_id": rule, "file": rel})
                    if self.changed():
                        return
        self.help_requests += 1


def main() -> None:
    case, work = read_case()
    settings = case["system"]["settings"]
    tree = work / case["files"]["inputs.source_dir"]
    m = Migrator(tree, bool(settings.get("agents")), bool(settings.get("solution_server")))
    feedback = case["inputs"].get("feedback")
    tasks: list[dict[str, Any]] = []
    if feedback:
        m.repair(feedback)
    else:
        tasks = m.discover(case["inputs"].get("incidents", []))
        for task in tasks:
            m.fix(task)
    answer({"files": m.changed(), "tasks": tasks, "steps": m.steps, "help_requests": m.help_requests,
            "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}})


if __name__ == "__main__":
    main()
