"""A naive migrator: replaces every `javax.` with `jakarta.`, nothing else.

Wrong where the JDK keeps javax (javax.sql, javax.transaction.xa) and blind to EJB and
persistence-context rules: the demo's floor among real systems.
"""

from __future__ import annotations

from typing import Any

from evalkit.demo_systems.protocol import migrate_main


def rewrite(source: str, case: dict[str, Any]) -> str:
    return source.replace("javax.", "jakarta.")


if __name__ == "__main__":
    migrate_main(rewrite)
