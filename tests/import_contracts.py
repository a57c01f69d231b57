"""An import-linter contract type (``[tool.importlinter]`` in pyproject.toml names it): no import cycle among the
modules of a package, counting every import grimp finds (inside functions too; ``if TYPE_CHECKING:`` ones as
the top-level option says). import-linter's own ``acyclic_siblings`` compares whole sub-packages; this one
compares modules, as tests/test_architecture.py does with the standard library alone."""

from __future__ import annotations

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def module_cycles(nodes: set[str], imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(imports.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(imports.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


class AcyclicModulesContract(Contract):
    """No module of ``packages`` reaches itself through imports of modules of those packages."""

    type_name = "acyclic_modules"

    packages = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        nodes: set[str] = set()
        for package in self.packages:  # type: ignore[attr-defined]
            nodes |= {package.name} | graph.find_descendants(package.name)
        imports = {m: graph.find_modules_directly_imported_by(m) & nodes for m in nodes}
        cycles = module_cycles(nodes, imports)
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles, "imports": imports})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            members = set(cycle)
            output.print_error(f"a cycle of {len(cycle)} modules:")
            for module in cycle:
                inside = sorted(check.metadata["imports"][module] & members)
                output.print(f"    {module} -> {', '.join(inside)}")
            output.new_line()
