"""Bad input, said plainly: the file, the line, and what was expected."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with the project's input."""

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


class InputError(Exception):
    """One or more problems with config or case files; the CLI prints them and exits 2."""

    def __init__(self, problems: list[Problem] | Problem) -> None:
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def rel(path: str | Path, root: str | Path | None = None) -> str:
    """A path shown relative to ``root`` (or the working directory) when it lies below it."""
    p = Path(path)
    for base in (root, Path.cwd()):
        if base is None:
            continue
        try:
            return str(p.resolve().relative_to(Path(base).resolve()))
        except ValueError:
            continue
    return str(p)
