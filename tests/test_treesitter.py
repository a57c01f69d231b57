"""Tree-sitter helpers: syntax errors, enclosing functions, thread safety."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from evalkit.treesitter import (
    SUPPORTED,
    SyntaxIssue,
    UnsupportedLanguage,
    functions_at_lines,
    parser_for,
    syntax_errors,
)

JAVA = """\
package p;

public class Shop {
    private int total;

    public Shop() {
        total = 0;
    }

    public int add(int x) {
        total += x;
        return total;
    }

    static class Cart {
        void clear() {
            items = 0;
        }
    }
}
"""

PYTHON = """\
import os


def top(a):
    return a + 1


class Box:
    size = 3

    @property
    def area(self):
        def helper():
            return 2
        return helper() * self.size

    def grow(self):
        self.size += 1
"""


def test_supported_languages():
    assert SUPPORTED == {"java", "python"}


def test_clean_sources_have_no_errors():
    assert syntax_errors(JAVA, "java") == []
    assert syntax_errors(PYTHON, "python") == []


def test_missing_semicolon_in_java_is_reported_with_position():
    src = "class A {\n  void f() { int x = 1 }\n}\n"
    issues = syntax_errors(src, "java")
    assert issues == [SyntaxIssue(line=2, column=23, message="missing ';'")]


def test_python_error_node_is_reported():
    issues = syntax_errors("def f(:\n    pass\nx = = 2\n", "python")
    assert issues, "broken python must yield issues"
    assert all(i.line >= 1 and i.column >= 1 for i in issues)
    assert any(i.line == 3 for i in issues)


def test_column_counts_characters_not_bytes():
    src = 'class A {\n  void f() { String s = "ééé" }\n}\n'
    (issue,) = syntax_errors(src, "java")
    assert issue.line == 2
    # the missing ';' follows the closing quote: character column 30 (bytes would say 33)
    assert issue.column == len('  void f() { String s = "ééé"') + 1 == 30


def test_unsupported_language_raises_valueerror():
    with pytest.raises(UnsupportedLanguage, match="cobol"):
        syntax_errors("x", "cobol")
    with pytest.raises(ValueError):
        parser_for("go")


def test_java_functions_at_lines():
    assert functions_at_lines(JAVA, "java", [11]) == ["Shop.add"]
    assert functions_at_lines(JAVA, "java", [7]) == ["Shop.Shop"]
    assert functions_at_lines(JAVA, "java", [17]) == ["Shop.Cart.clear"]
    # order of first sighting, deduplicated, lines outside functions ignored
    assert functions_at_lines(JAVA, "java", [17, 1, 4, 12, 11, 17]) == ["Shop.Cart.clear", "Shop.add"]


def test_python_functions_at_lines():
    assert functions_at_lines(PYTHON, "python", [5]) == ["top"]
    assert functions_at_lines(PYTHON, "python", [18]) == ["Box.grow"]
    # innermost: the nested helper, qualified with its enclosing function
    assert functions_at_lines(PYTHON, "python", [14]) == ["Box.area.helper"]
    assert functions_at_lines(PYTHON, "python", [15]) == ["Box.area"]
    # a decorator line belongs to the decorated method
    assert functions_at_lines(PYTHON, "python", [11]) == ["Box.area"]
    # class body outside methods, imports and blanks: nothing
    assert functions_at_lines(PYTHON, "python", [1, 9, 2]) == []


def test_parsers_are_per_thread_and_safe_in_threads():
    assert parser_for("java") is parser_for("java")

    def work(i: int) -> tuple[list[str], int, int]:
        return (
            functions_at_lines(JAVA, "java", [11, 17]),
            len(syntax_errors(JAVA, "java")),
            id(parser_for("python")),
        )

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(64)))
    assert all(r[0] == ["Shop.add", "Shop.Cart.clear"] and r[1] == 0 for r in results)
    # not every thread shares one parser
    assert len({r[2] for r in results}) > 1
