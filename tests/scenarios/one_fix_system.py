"""Test system for the e2e loop: fixes exactly one broken function per invocation.

Without feedback it fixes the first broken function in file order; with feedback it fixes the
function of the first failing test. So an application with N failing tests becomes stable at
iteration N.
"""

import json
import os
import re
import sys
from pathlib import Path

case = json.loads(Path(os.environ["EVALKIT_CASE"]).read_text())
tree = Path(os.environ["EVALKIT_CASE"]).parent / case["files"]["inputs.source_dir"]
source = (tree / "calc.py").read_text()
broken = re.findall(r"^def (\w+)\(.*\n    return 0  # BUG$", source, re.M)
feedback = case["inputs"].get("feedback")
target = None
if feedback:
    for test in feedback["failing_tests"]:
        name = test.rsplit("::test_", 1)[-1]
        if name in broken:
            target = name
            break
elif broken:
    target = broken[0]
files = {}
if target:
    files["calc.py"] = re.sub(rf"(def {target}\(a, b\):\n    )return 0  # BUG", r"\1return " + {
        "add": "a + b", "sub": "a - b", "mul": "a * b"}[target], source)
json.dump({"files": files, "steps": 1, "help_requests": 0 if target else 1}, sys.stdout)
