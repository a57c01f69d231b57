"""The site's release list: site/manifest.json lists releases (newest first, in the order they were first
built), every file of each release, the shared assets and the JSON Schemas."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from evalkit.fsutil import atomic_write_json

# Shipped as package data (evalkit/templates: in a checkout a link to the top-level templates/ folder).
PACKAGE_TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


def templates_dir(override: str | Path | None = None) -> Path:
    """The templates folder: the config's override (`templates_dir`), else the one shipped in the package."""
    return Path(override) if override else PACKAGE_TEMPLATES


def _manifest(site: Path) -> dict[str, Any]:
    try:
        return json.loads((site / "manifest.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {"releases": []}


def _known(manifest: dict[str, Any]) -> list[str]:
    """Releases in build order (oldest first), whichever order the manifest stores them in."""
    rows = manifest.get("releases", [])
    names = [r["release"] for r in rows]
    return names if manifest.get("order") != "newest-first" else list(reversed(names))


def list_releases(site: Path) -> list[str]:
    """Releases present under site/, newest first."""
    known = _known(_manifest(site))
    present = {p.parent.name for p in site.glob("*/report.json")}
    order = [r for r in known if r in present] + sorted(present - set(known))
    return list(reversed(order))


def _published_files(site: Path, release: str) -> list[str]:
    """Every published file of a release, as site-relative POSIX paths (os.walk: a release has thousands)."""
    files: list[str] = []
    for folder, _dirs, names in os.walk(site / release):
        rel = Path(folder).relative_to(site).as_posix()
        # dot-files (the page index, atomic-write temp files) are not published content
        files.extend(f"{rel}/{n}" for n in names if not (n.startswith(".") or n.endswith(".tmp")))
    return sorted(files)


def update_manifest(site: Path, release: str) -> dict[str, Any]:
    """Add ``release`` (if new) and refresh every release's file list."""
    manifest = _manifest(site)
    known = _known(manifest)
    present = {p.parent.name for p in site.glob("*/report.json")}
    order = [r for r in known if r in present]
    order += sorted(present - set(order) - {release})
    if release in present and release not in order:
        order.append(release)
    out: dict[str, Any] = {"schema_version": 1, "order": "newest-first", "releases": []}
    for r in reversed(order):  # newest first, as the index lists them
        files = _published_files(site, r)
        out["releases"].append({"release": r, "report": f"{r}/report.json", "index": f"{r}/index.html",
                                "files": files})
    out["assets"] = sorted(p.relative_to(site).as_posix() for p in (site / "assets").glob("*") if p.is_file())
    out["compare"] = sorted(p.relative_to(site).as_posix() for p in (site / "compare").glob("*..*.*")
                            if p.is_file() and not (p.name.startswith(".") or p.name.endswith(".tmp")))
    out["schemas"] = sorted(p.relative_to(site).as_posix() for p in (site / "schemas").glob("*.schema.json"))
    atomic_write_json(site / "manifest.json", out)
    return out


def previous_report_path(site: Path, release: str) -> Path | None:
    """report.json of the release before ``release`` (newest other release present), if any."""
    releases = [r for r in list_releases(site) if r != release]
    return site / releases[0] / "report.json" if releases else None
