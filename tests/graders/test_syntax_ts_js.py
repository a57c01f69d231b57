"""TypeScript and JavaScript syntax checks (tree-sitter 0.21 grammars): valid and broken files, by extension."""

from __future__ import annotations

import pytest

from evalkit.artifacts import Sample
from evalkit.casemodels import AssertionSpec
from evalkit.graders.assertions import run_assertions
from evalkit.graders.syntax import check_files, check_syntax
from evalkit.treesitter import EXTENSIONS, PARSEABLE, functions_at_lines, language_of_path, syntax_errors
from helpers import REALDATA

REAL = REALDATA / "api_automation_agent_evals" / "evaluations" / "data"

VALID_TS = """\
import { UserService } from "../../models/services/UserService.js";
import type { UserModel } from "../../models/requests/UserModel.js";

describe("POST /users", () => {
  const service = new UserService();
  let created: number[] = [];

  afterEach(async () => {
    for (const id of created) await service.deleteUser(id);
  });

  it("creates a user", async () => {
    const body: UserModel = { name: "Ada", email: `ada${Date.now()}@example.com` };
    const response = await service.createUser<UserModel>(body);
    expect(response.status).to.equal(201);
    created.push(response.data?.id as number);
  });
});
"""
# Line 4 lacks the closing parenthesis of the call.
BROKEN_TS = """\
describe("GET /users", () => {
  it("lists users", async () => {
    const service = new UserService();
    const response = await service.getUsers(;
    expect(response.status).to.equal(200);
  });
});
"""
VALID_TSX = "export const Badge = ({ n }: { n: number }) => <span className=\"n\">{n}</span>;\n"
VALID_JSX = "export function Badge({ n }) {\n  return <span>{n}</span>;\n}\n"
VALID_JS = "const axios = require('axios');\nmodule.exports = async function get(id) {\n  return axios.get(`/users/${id}`);\n};\n"
BROKEN_JS = "export function total(items) {\n  let sum = 0;\n  for (const i of items) {\n    sum += i.price;\n  return sum;\n}\n"
VALID_MJS = "export default class Cart {\n  add(item) { this.items = [...(this.items ?? []), item]; }\n}\n"


def test_every_extension_of_the_brief_has_a_grammar() -> None:
    for ext in (".ts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"):
        assert EXTENSIONS[ext] in PARSEABLE
        assert language_of_path(f"src/tests/users/x{ext}") == EXTENSIONS[ext]
    assert language_of_path("README.md") is None and language_of_path("src.ts/Makefile") is None


@pytest.mark.parametrize("path,text", [("a.spec.ts", VALID_TS), ("b.tsx", VALID_TSX), ("c.jsx", VALID_JSX),
                                       ("d.js", VALID_JS), ("e.mjs", VALID_MJS), ("f.cjs", VALID_JS)])
def test_valid_files_parse(path: str, text: str) -> None:
    result = check_files({path: text})
    assert result is not None and result.valid is True and result.issues == []


def test_broken_typescript_is_flagged_with_file_and_line() -> None:
    result = check_files({"src/tests/users/getUsers.spec.ts": BROKEN_TS, "src/models/UserModel.ts": VALID_TS})
    assert result is not None and result.valid is False
    assert len(result.issues) == 1 and result.issues[0].startswith("src/tests/users/getUsers.spec.ts:4:")


def test_broken_javascript_names_its_line() -> None:
    issues = syntax_errors(BROKEN_JS, "javascript")
    assert issues and issues[0].message == "missing '}'"
    result = check_files({"lib/total.js": BROKEN_JS})
    assert result is not None and not result.valid and result.issues[0].startswith("lib/total.js:")


def test_tsx_needs_the_tsx_grammar() -> None:
    # JSX in a .ts file is an error; the same text in .tsx parses: the extension picks the grammar.
    assert check_files({"x.tsx": VALID_TSX}).valid is True
    assert check_files({"x.ts": VALID_TSX}).valid is False


def test_files_without_a_parser_are_not_checked_and_blank_files_fail() -> None:
    assert check_files({"notes.md": "# x", "data.json": "{"}) is None
    result = check_files({"a.ts": "  \n", "notes.md": "x"})
    assert result is not None and result.valid is False and result.issues == ["a.ts: empty file"]


def test_suite_language_names_and_the_assertion() -> None:
    assert check_syntax(VALID_TS, "typescript").valid is True
    assert check_syntax(VALID_TS, "ts").valid is True
    bad = check_syntax(BROKEN_TS, "typescript")
    assert bad.valid is False and bad.issues[0].startswith("line 4:")
    assert check_syntax("x", "cobol").valid is None
    results, score = run_assertions([AssertionSpec(type="syntax_valid", value="javascript")],
                                    Sample(files={"a.js": BROKEN_JS}), "text", "a.js")
    assert score == 0.0 and "missing '}'" in results[0].detail


def test_enclosing_functions_in_typescript() -> None:
    assert functions_at_lines(VALID_MJS, "javascript", [2]) == ["Cart.add"]
    src = "export class UserService {\n  async getUser(id: number) {\n    return id;\n  }\n}\nfunction helper() {\n  return 1;\n}\n"
    assert functions_at_lines(src, "typescript", [3, 7]) == ["UserService.getUser", "helper"]


@pytest.mark.realdata("api_automation_agent_evals", "evaluations", "data")
def test_every_real_llmservice_typescript_file_parses() -> None:
    files = {str(p.relative_to(REAL)): p.read_text(encoding="utf-8") for p in sorted(REAL.rglob("*.ts"))}
    assert len(files) >= 50
    result = check_files(files)
    assert result is not None and result.valid is True, result.issues
