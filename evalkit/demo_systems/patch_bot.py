"""patch-bot: a rule-based bug fixer for the demo patch suite (a real program, no model).

It searches the source tree for the function the problem statement names, rewrites it with one
of its recipes and answers with a unified diff plus the files and functions it looked at. Its
recipes are deliberately uneven, so the demo shows every outcome the sandbox must tell apart:
a correct fix, a patch for a file that is not there, a fix that breaks other tests, a fix that
hangs, and a patch that prints fake PASSED lines instead of fixing anything.
"""

from __future__ import annotations

import difflib
import re

from evalkit.demo_systems.protocol import answer, read_case

# function named in the problem -> (how, old text, new text)
RECIPES = {
    "round_cents": ("fix", "    return int(amount * 100) / 100\n",
                    "    return int(amount * 100 + 0.5) / 100\n"),
    "remove": ("stale", "        self.items[name] = (count - quantity, price)\n",
               "        if quantity > count:\n            raise ValueError(\"not enough stock\")\n"
               "        self.items[name] = (count - quantity, price)\n"),
    "slugify": ("fix", "    return re.sub(r\"[^A-Za-z0-9]+\", \"-\", name).strip(\"-\")\n",
                "    return re.sub(r\"[^a-z0-9]\", \"-\", name.lower()).strip(\"-\")\n"),
    "total_value": ("fix", "        return sum(price for _count, price in self.items.values())\n",
                    "        total = 0\n        while self.items:\n            total += 0\n        return total\n"),
    "parse_amount": ("fake", "", ""),
    "truncate": ("fix", "    return text[:limit] + \"…\"\n", "    return text[: limit - 1] + \"…\"\n"),
}
DEF = re.compile(r"^\s*def (\w+)\(", re.MULTILINE)


def diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}"))


def fake_passes(test_ids: list[str]) -> str:
    lines = "".join(f'    print("PASSED {t}")\n' for t in test_ids)
    body = f"def pytest_unconfigure(config):\n{lines}"
    n = len(body.splitlines())
    return (f"diff --git a/tests/conftest.py b/tests/conftest.py\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/tests/conftest.py\n@@ -0,0 +1,{n} @@\n" + "".join("+" + l for l in body.splitlines(True)))


def main() -> None:
    case, work = read_case()
    tree = work / case["files"]["inputs.source_dir"]
    problem = case["inputs"].get("problem_statement", "")
    sources = {str(p.relative_to(tree)): p.read_text(encoding="utf-8") for p in sorted(tree.rglob("*.py"))
               if not str(p.relative_to(tree)).startswith("tests/")}
    named = [f for f in RECIPES if re.search(rf"\b{re.escape(f)}\b", problem)] or \
            [f for f in RECIPES if re.search(rf"\b{re.escape(f.split('_')[0])}", problem)]
    target = named[0] if named else None
    where = [path for path, text in sources.items() if target and re.search(rf"def {target}\(", text)]
    ranked = where + [p for p in sources if p not in where]
    functions = []
    for path in where:
        text = sources[path]
        cls = re.findall(r"^class (\w+)", text, re.MULTILINE)
        functions.append(f"{path}::{cls[0] + '.' if cls and f'    def {target}' in text else ''}{target}")
    result = {"context_files": ranked, "context_functions": functions, "steps": 3,
              "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}}
    if target is None or not where:
        result["text"] = "no recipe for this problem"
        answer(result)
        return
    how, old, new = RECIPES[target]
    path = where[0]
    if how == "fake":
        result["patch"] = fake_passes(["tests/test_parse.py::test_parse_thousands"])
    elif how == "stale":
        # remembers the file under its old name: a patch for a file that is not in the tree
        result["patch"] = diff(path.replace("stock", "inventory"), sources[path], sources[path].replace(old, new))
    else:
        result["patch"] = diff(path, sources[path], sources[path].replace(old, new))
    answer(result)


if __name__ == "__main__":
    main()
