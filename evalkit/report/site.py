"""The site's release list: site/manifest.json records releases in the order they were first built."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalkit.fsutil import atomic_write_json

PACKAGE_TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def templates_dir(override: str | Path | None = None) -> Path:
    """The templates folder: the config's override, else the project's `templates/`."""
    return Path(override) if override else PACKAGE_TEMPLATES


def _manifest(site: Path) -> dict[str, Any]:
    try:
        return json.loads((site / "manifest.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {"releases": []}


def list_releases(site: Path) -> list[str]:
    """Releases present under site/, newest first."""
    known = [r["release"] for r in _manifest(site).get("releases", [])]
    present = {p.parent.name for p in site.glob("*/report.json")}
    order = [r for r in known if r in present] + sorted(present - set(known))
    return list(reversed(order))


def update_manifest(site: Path, release: str) -> dict[str, Any]:
    """Add ``release`` (if new) and refresh every release's file list."""
    manifest = _manifest(site)
    known = [r["release"] for r in manifest.get("releases", [])]
    present = {p.parent.name for p in site.glob("*/report.json")}
    order = [r for r in known if r in present]
    order += sorted(present - set(order) - {release})
    if release in present and release not in order:
        order.append(release)
    out = {"schema_version": 1, "releases": []}
    for r in order:
        files = sorted(str(p.relative_to(site)) for p in (site / r).rglob("*")
                       if p.is_file() and not p.name.startswith("."))
        out["releases"].append({"release": r, "report": f"{r}/report.json", "files": files})
    atomic_write_json(site / "manifest.json", out)
    return out


def previous_report_path(site: Path, release: str) -> Path | None:
    """report.json of the release before ``release`` (newest other release present), if any."""
    releases = [r for r in list_releases(site) if r != release]
    return site / releases[0] / "report.json" if releases else None
