"""Text helpers for item names."""

import re


def slugify(name):
    """"Blue Widget" -> "blue-widget"."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


def truncate(text, limit):
    """At most `limit` characters, with "…" when cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + "…"


def title(name):
    return " ".join(word.capitalize() for word in name.split())
