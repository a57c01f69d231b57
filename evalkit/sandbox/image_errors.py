"""The failure of getting a sandbox image, without docker-py: what code that only catches it imports."""

from __future__ import annotations


class ImageUnavailable(RuntimeError):
    """No image of that name is present, pullable or buildable (an infrastructure failure)."""
