"""The layers of docs/extending/architecture.md hold (issue 28): orchestration > kinds > engine > core, each layer
importing only the ones below it, no import cycle among evalkit's modules, imports inside functions counted.

Two checks of one rule: `lint-imports` runs the contracts of pyproject.toml's ``[tool.importlinter]`` (as .ci/run
does), and the standard library's ``ast`` reads every module here, so the rule holds without import-linter's
reading too, and for the package ``__init__`` modules no contract layer lists."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.helpers import REPO
from tests.import_contracts import module_cycles

PACKAGE = REPO / "evalkit"
LAYER_NAMES = ("core", "engine", "kinds", "orchestration")
SPLIT_INITS = {"evalkit": "core", "evalkit.graders": "core", "evalkit.llm": "core", "evalkit.metrics": "core",
               "evalkit.stages": "core"}
"""``__init__`` of packages whose modules sit in more than one layer (no contract layer lists them): the layer their
own imports need."""


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(mods: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {evalkit module it imports: line}, every import statement but those under ``if TYPE_CHECKING:``
    (inside functions too)."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, int]] = {}
    for module, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(n) for node in ast.walk(tree)
                       if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                       for n in ast.walk(node)}
        edges: dict[str, int] = {}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "later":
                # a module named at the top and loaded on first use (evalkit.lazy_modules): an import all the same
                targets = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                    base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            else:
                continue
            for target in targets:
                found = resolve(target) if target.startswith("evalkit") else None
                if found is not None and found != module:
                    edges.setdefault(found, node.lineno)
        graph[module] = edges
    return graph


def contract_layers() -> list[list[str]]:
    """The layers contract's modules, highest layer first (pyproject.toml)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [[m.strip() for m in layer.split(":")] for layer in contract["layers"]]


def layer_of(module: str, listed: dict[str, str]) -> str | None:
    if module in SPLIT_INITS:
        return SPLIT_INITS[module]
    name = module
    while name:
        if name in listed:
            return listed[name]
        name = name.rpartition(".")[0]
    return None


def test_lint_imports_keeps_every_contract() -> None:
    beside = Path(sys.executable).parent / "lint-imports"  # this interpreter's own (a venv not activated)
    exe = str(beside) if beside.exists() else shutil.which("lint-imports")
    assert exe is not None, "lint-imports is not installed (pip install -e '.[test]')"
    proc = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "0 broken" in proc.stdout, proc.stdout + proc.stderr


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    graph = imports(modules())
    cycles = module_cycles(set(graph), {m: set(e) for m, e in graph.items()})
    assert cycles == [], "import cycles (imports inside functions count):\n" + "\n".join(
        " ".join(c) for c in cycles)


def test_every_module_has_a_layer_and_imports_only_below_it() -> None:
    layers = contract_layers()
    assert len(layers) == len(LAYER_NAMES)
    listed = {m: name for name, layer in zip(reversed(LAYER_NAMES), layers) for m in layer}
    mods = modules()
    unplaced = sorted(m for m in mods if layer_of(m, listed) is None)
    assert unplaced == [], f"modules in no layer (add them to pyproject.toml's layers contract): {unplaced}"
    rank = {name: i for i, name in enumerate(LAYER_NAMES)}
    upward = [f"{m} ({layer_of(m, listed)}) -> {t} ({layer_of(t, listed)}), line {line}"
              for m, edges in imports(mods).items() for t, line in sorted(edges.items())
              if rank[str(layer_of(t, listed))] > rank[str(layer_of(m, listed))]]
    assert upward == [], "imports of a higher layer:\n" + "\n".join(upward)


def test_the_checks_see_an_import_inside_a_function(tmp_path: Path) -> None:
    """The ast reading counts a function's import: a cycle made only of such imports is one."""
    mods = {"evalkit.a": tmp_path / "a.py", "evalkit.b": tmp_path / "b.py"}
    mods["evalkit.a"].write_text("def f():\n    from evalkit.b import g\n", encoding="utf-8")
    mods["evalkit.b"].write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from evalkit.a import f\n"
                                 "def g():\n    import evalkit.a\n", encoding="utf-8")
    graph = imports(mods)
    assert graph == {"evalkit.a": {"evalkit.b": 2}, "evalkit.b": {"evalkit.a": 5}}
    assert module_cycles(set(graph), {m: set(e) for m, e in graph.items()}) == [["evalkit.a", "evalkit.b"]]


def test_no_module_imports_another_modules_private_name() -> None:
    """A name with a leading underscore is its module's own: another module importing it says the name belongs
    somewhere public (issue 28 found 17)."""
    private = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evalkit"):
                private += [f"{module}:{node.lineno} imports {node.module}.{a.name}" for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__")]
    assert private == [], "\n".join(private)


def test_every_import_inside_a_function_says_why() -> None:
    """Imports sit at the top of a module; one inside a function (a heavy third-party module, or a command's or a
    stage's own code kept off the start of `evalkit run`) carries a ``# deferred: <reason>`` comment."""
    silent = []
    for module, path in modules().items():
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        typing_only = {id(n) for node in ast.walk(tree)
                       if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                       for n in ast.walk(node)}
        for func in ast.walk(tree):
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                silent += [f"{module}:{n.lineno} {ast.unparse(n)}" for n in ast.walk(func)
                           if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in typing_only
                           and "# deferred:" not in lines[n.end_lineno - 1]]
    assert sorted(set(silent)) == [], "\n".join(sorted(set(silent)))


def later_references() -> dict[str, list[tuple[str, int]]]:
    """module -> [(module it names in ``later("...")``, line)] (evalkit.lazy_modules)."""
    found: dict[str, list[tuple[str, int]]] = {}
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "later":
                found.setdefault(module, []).extend((a.value, node.lineno) for a in node.args
                                                    if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return found


def test_every_later_reference_names_a_module_that_loads() -> None:
    """A ``later("evalkit....")`` reference is an import made on first use: it names an existing module (the
    layer and cycle checks above count it as an import), and that module imports without error."""
    import importlib

    refs = later_references()
    assert sum(len(v) for v in refs.values()) > 40  # the kinds' stage code, the stage actions of tasks.py
    mods = modules()
    missing = [f"{m}:{line} later({t!r})" for m, found in refs.items() for t, line in found if t not in mods]
    assert missing == [], "later() references to no module:\n" + "\n".join(missing)
    for target in sorted({t for found in refs.values() for t, _ in found}):
        assert importlib.import_module(target).__name__ == target


def test_a_later_module_loads_on_first_use_and_sees_patches() -> None:
    """`later` imports nothing until an attribute is read, then reads the real module's attribute each time."""
    import subprocess
    import sys

    code = ("import sys\nfrom evalkit.lazy_modules import later\nm = later('evalkit.difflines')\n"
            "assert 'evalkit.difflines' not in sys.modules\nf = m.line_class\n"
            "import evalkit.difflines as real\nassert f is real.line_class\n"
            "real.line_class = len\nassert m.line_class is len\nprint('ok')")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "ok", proc.stderr


TYPE_ONLY_HUBS = {
    "evalkit.contracts": "the plug-in Protocols name the engine data they exchange (a sandbox backend's TestRunSpec, "
                         "a provider's LLMRequest); it imports nothing of evalkit's at run time",
    "evalkit.kind_registry": "hands the stages the Kind a suite names (the one place the engine reaches a kind)",
}
"""Core modules whose ``if TYPE_CHECKING:`` imports may name a higher layer's types, and why."""


def test_type_only_imports_respect_the_layers_too() -> None:
    """`if TYPE_CHECKING:` imports are not run, but they are still what a module knows of: they respect the
    layers, outside the two typing hubs listed above (e.g. a kind's page reads evalkit.case_detail.CaseDetail,
    a core model, not evalkit.report's)."""
    layers = contract_layers()
    listed = {m: name for name, layer in zip(reversed(LAYER_NAMES), layers) for m in layer}
    rank = {name: i for i, name in enumerate(LAYER_NAMES)}
    mods = modules()
    upward = []
    for module, path in mods.items():
        if module in TYPE_ONLY_HUBS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
                continue
            for imp in ast.walk(node):
                if isinstance(imp, ast.ImportFrom) and (imp.module or "").startswith("evalkit"):
                    target = imp.module or ""
                    while target and target not in mods:
                        target = target.rpartition(".")[0]
                    if target and rank[str(layer_of(target, listed))] > rank[str(layer_of(module, listed))]:
                        upward.append(f"{module} -> {target}, line {imp.lineno}")
    assert upward == [], "type-only imports of a higher layer:\n" + "\n".join(upward)


def public_any(path: Path, root: Path = REPO) -> list[str]:
    """Parameters and return types annotated with a bare ``Any`` in the public functions of one module."""
    found: list[str] = []
    where = path.relative_to(root)

    def visit(node: ast.AST, public: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not public or (child.name.startswith("_") and child.name not in ("__init__", "__call__")):
                    continue
                a = child.args
                params = a.posonlyargs + a.args + a.kwonlyargs + [p for p in (a.vararg, a.kwarg) if p]
                found.extend(f"{where}:{child.lineno} {child.name}({p.arg})" for p in params
                             if p.annotation is not None and ast.unparse(p.annotation) == "Any")
                if child.returns is not None and ast.unparse(child.returns) == "Any":
                    found.append(f"{where}:{child.lineno} {child.name} -> Any")
            elif isinstance(child, ast.ClassDef):
                visit(child, public and not child.name.startswith("_"))

    visit(ast.parse(path.read_text(encoding="utf-8")), True)
    return found


def test_no_bare_any_in_a_public_signature() -> None:
    """Issue 28: a public function says what it takes and returns (`object` for a value it only inspects; JSON
    bodies stay ``dict[str, Any]``)."""
    found = [hit for path in modules().values() for hit in public_any(path)]
    assert found == [], "bare Any in public signatures:\n" + "\n".join(found)


def test_the_any_check_sees_a_bare_any(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("from typing import Any\n\nclass C:\n    def f(self, x: Any) -> int: ...\n"
                                   "    def _g(self, y: Any) -> Any: ...\n\ndef h() -> Any: ...\n")
    assert public_any(tmp_path / "m.py", tmp_path) == ["m.py:4 f(x)", "m.py:7 h -> Any"]
