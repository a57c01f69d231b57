"""A rule-aware migrator: the javax packages Jakarta EE renamed, EJB scopes, persistence context.

Keeps javax.sql and javax.transaction.xa (they stay in the JDK), turns @Stateless into
@ApplicationScoped and @PersistenceContext into @Inject, and sorts the import block it touched.
Message-driven beans are left alone (it does not know reactive messaging).
"""

from __future__ import annotations

import re
from typing import Any

from evalkit.demo_systems.protocol import migrate_main

RENAMED = ("persistence", "inject", "enterprise", "ws.rs", "servlet", "ejb", "validation", "json", "faces",
           "transaction", "mail", "jms", "websocket", "batch", "security", "annotation")
KEPT = ("javax.transaction.xa", "javax.annotation.processing", "javax.sql", "javax.naming", "javax.crypto")
IMPORT = re.compile(r"^import\s+(static\s+)?([\w.]+)\s*;\s*$")


def _rename(name: str) -> str:
    if name.startswith(KEPT):
        return name
    for pkg in RENAMED:
        if name.startswith(f"javax.{pkg}."):
            return "jakarta." + name[len("javax."):]
    return name


def rewrite(source: str, case: dict[str, Any]) -> str:
    text = source
    if re.search(r"^@Stateless\b", text, re.MULTILINE):
        text = re.sub(r"^@Stateless\b.*$", "@ApplicationScoped", text, flags=re.MULTILINE)
        text = text.replace("import javax.ejb.Stateless;", "import jakarta.enterprise.context.ApplicationScoped;")
    if "@PersistenceContext" in text:
        text = re.sub(r"@PersistenceContext(\([^)]*\))?", "@Inject", text)
        text = text.replace("import javax.persistence.PersistenceContext;", "import jakarta.inject.Inject;")
    lines = text.split("\n")
    out: list[str] = []
    block: list[str] = []

    def flush() -> None:
        if block:
            names = sorted({_rename(IMPORT.match(l).group(2)) for l in block})  # type: ignore[union-attr]
            jakarta = [n for n in names if n.startswith("jakarta.")]
            rest = [n for n in names if not n.startswith("jakarta.")]
            out.extend(f"import {n};" for n in jakarta + rest)
            block.clear()

    for line in lines:
        if IMPORT.match(line) and not IMPORT.match(line).group(1):  # type: ignore[union-attr]
            block.append(line)
            continue
        flush()
        out.append(line)
    flush()
    return "\n".join(out)


if __name__ == "__main__":
    migrate_main(rewrite)
