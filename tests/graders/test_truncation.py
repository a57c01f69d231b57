"""#25: elision comments in any wording, and silent truncation found structurally (declarations the legacy and
expected files share missing from a shorter answer), on Java, Python, TypeScript, JavaScript and Go."""

from __future__ import annotations

import pytest

from evalkit.graders.canaries import truncated
from evalkit.graders.declarations import missing_structure, structure
from evalkit.graders.degenerate import assess, elisions

JAVA_LEGACY = """package com.acme.orders;

import javax.ejb.Stateless;
import javax.inject.Inject;
import javax.persistence.EntityManager;

@Stateless
public class OrderService {

    @Inject
    EntityManager em;

    private int calls;

    public Order find(long id) {
        calls++;
        return em.find(Order.class, id);
    }

    public void save(Order order) {
        calls++;
        em.persist(order);
    }

    public void remove(Order order) {
        calls++;
        em.remove(order);
    }

    public int count() {
        return calls;
    }
}
"""
JAVA_EXPECTED = (JAVA_LEGACY.replace("import javax.ejb.Stateless;", "import jakarta.enterprise.context.ApplicationScoped;")
                 .replace("javax.", "jakarta.").replace("@Stateless", "@ApplicationScoped"))

PY_LEGACY = '''"""Orders repository."""

import sqlite3


class Repository:
    table = "orders"

    def __init__(self, path):
        self.db = sqlite3.connect(path)

    def find(self, order_id):
        return self.db.execute("select * from orders where id = ?", (order_id,)).fetchone()

    def save(self, order):
        self.db.execute("insert into orders values (?, ?)", (order.id, order.total))

    def remove(self, order_id):
        self.db.execute("delete from orders where id = ?", (order_id,))

    def count(self):
        return self.db.execute("select count(*) from orders").fetchone()[0]


def open_repository(path):
    return Repository(path)
'''
PY_EXPECTED = PY_LEGACY.replace("import sqlite3", "import sqlite3 as sqlite").replace("sqlite3.connect", "sqlite.connect")

TS_LEGACY = """import { Request, Response } from "express";
import { Orders } from "./orders";

export class OrderController {
  private orders: Orders = new Orders();

  find(req: Request, res: Response): void {
    res.json(this.orders.find(req.params.id));
  }

  save(req: Request, res: Response): void {
    this.orders.save(req.body);
    res.sendStatus(201);
  }

  remove(req: Request, res: Response): void {
    this.orders.remove(req.params.id);
    res.sendStatus(204);
  }

  count(req: Request, res: Response): void {
    res.json({ count: this.orders.count() });
  }
}

export function controller(): OrderController {
  return new OrderController();
}
"""
TS_EXPECTED = TS_LEGACY.replace('from "express"', 'from "fastify"')

JS_LEGACY = """const express = require("express");
import { Orders } from "./orders.js";

export class OrderController {
  orders = new Orders();

  find(req, res) {
    res.json(this.orders.find(req.params.id));
  }

  save(req, res) {
    this.orders.save(req.body);
    res.sendStatus(201);
  }

  remove(req, res) {
    this.orders.remove(req.params.id);
    res.sendStatus(204);
  }

  count(req, res) {
    res.json({ count: this.orders.count() });
  }
}

export function controller() {
  return new OrderController();
}
"""
JS_EXPECTED = JS_LEGACY.replace('"./orders.js"', '"./store/orders.js"')

GO_LEGACY = """package orders

import (
\t"database/sql"
\t"fmt"
)

// Repository keeps orders.
type Repository struct {
\tDB    *sql.DB
\tTable string
}

func (r *Repository) Find(id int) (string, error) {
\tvar s string
\terr := r.DB.QueryRow(fmt.Sprintf("select name from %s where id = ?", r.Table), id).Scan(&s)
\treturn s, err
}

func (r *Repository) Save(id int, name string) error {
\t_, err := r.DB.Exec("insert into orders values (?, ?)", id, name)
\treturn err
}

func (r *Repository) Remove(id int) error {
\t_, err := r.DB.Exec("delete from orders where id = ?", id)
\treturn err
}

func (r *Repository) Count() (int, error) {
\tvar n int
\terr := r.DB.QueryRow("select count(*) from orders").Scan(&n)
\treturn n, err
}

func Open(db *sql.DB) *Repository {
\treturn &Repository{DB: db, Table: "orders"}
}
"""
GO_EXPECTED = GO_LEGACY.replace('"database/sql"', '"github.com/jmoiron/sqlx"').replace("*sql.DB", "*sqlx.DB")

FILES = {"java": (JAVA_LEGACY, JAVA_EXPECTED), "python": (PY_LEGACY, PY_EXPECTED),
         "typescript": (TS_LEGACY, TS_EXPECTED), "javascript": (JS_LEGACY, JS_EXPECTED), "go": (GO_LEGACY, GO_EXPECTED)}


@pytest.mark.parametrize("language", sorted(FILES))
def test_structure_reads_the_declarations(language: str) -> None:
    legacy, _ = FILES[language]
    decls = structure(legacy, language).declarations
    assert any(d.startswith("type ") for d in decls), decls
    methods = {d.rsplit(".", 1)[-1] for d in decls if d.startswith("method ")}
    assert {m.lower() for m in methods} >= {"find", "save", "remove", "count"}, decls


@pytest.mark.parametrize("language", sorted(FILES))
def test_silent_truncation_is_incomplete_and_the_full_answer_is_not(language: str) -> None:
    legacy, expected = FILES[language]
    assert assess(expected, legacy, language, expected).complete  # the expected answer itself
    half = truncated(expected, language)  # braces closed, no comment: only the structure tells
    found = assess(half, legacy, language, expected)
    assert not found.complete, half
    assert any("declares no" in e for e in found.elisions), found.elisions
    # without the expected file (the judge's pre-check), nothing structural is claimed
    assert all("declares no" not in e for e in elisions(half, language, legacy))


@pytest.mark.parametrize("language", sorted(FILES))
def test_a_renamed_method_is_not_a_truncation_but_not_kept_either(language: str) -> None:
    legacy, expected = FILES[language]
    renamed = expected.replace("count", "total").replace("Count", "Total")
    assert assess(renamed, legacy, language, expected).complete  # same length: nothing cut off
    assert any("keeps no method" in m for m in missing_structure(renamed, legacy, expected, language))


@pytest.mark.parametrize("comment", [
    "// rest unchanged", "// same as before", "// TODO: migrate the other methods", "// ... existing code ...",
    "// (unchanged)", "// everything else stays the same", "// remaining methods as before",
    "// similarly for the other methods", "// <snip>", "// the other getters follow the same pattern",
    "// keep the existing implementation", "// add the remaining methods here", "/* rest omitted */",
    "// FIXME: convert the remaining beans", "// ... unchanged ...", "// as above",
])
def test_elision_comments_in_other_words(comment: str) -> None:
    text = JAVA_EXPECTED.replace("    public int count() {", f"    {comment}\n\n    public int calls() {{")
    assert not assess(text, JAVA_LEGACY, "java").complete, comment
    py = PY_EXPECTED.replace("    def count(self):", f"    {comment.replace('//', '#').replace('/*', '#').replace('*/', '')}\n\n"
                                                     "    def count(self):")
    assert not assess(py, PY_LEGACY, "python").complete, comment


@pytest.mark.parametrize("comment", [
    "// Returns the same order as the database does", "// TODO: cache this lookup",
    "// Remove the order from the persistence context", "// Keep in sync with OrderResource",
    "// The rest endpoint below is public", "// See the original EJB for the transaction semantics",
    "// Unchanged orders are skipped by the batch job below, see Batch.java",
])
def test_ordinary_comments_are_not_elisions(comment: str) -> None:
    text = JAVA_EXPECTED.replace("    public int count() {", f"    {comment}\n    public int calls() {{")
    assert assess(text, JAVA_LEGACY, "java", JAVA_EXPECTED).complete, comment


@pytest.mark.parametrize("language", ["java", "typescript", "javascript"])
def test_method_bodies_reduced_to_stubs_are_incomplete(language: str) -> None:
    legacy, expected = FILES[language]
    stub = {"java": "        return null;", "typescript": "    return;", "javascript": "    throw new Error(\"todo\");"}[language]
    lines = expected.splitlines()
    # the body of the first method whose signature line ends with "{": every statement replaced by a stub
    start = next(i for i, ln in enumerate(lines) if "find(" in ln and ln.rstrip().endswith("{"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == "}")
    stubbed = "\n".join(lines[:start + 1] + [stub] + lines[end:]) + "\n"
    found = assess(stubbed, legacy, language, expected)
    assert not found.complete and any("body reduced to a stub" in e for e in found.elisions), found.elisions
    assert assess(expected, legacy, language, expected).complete
