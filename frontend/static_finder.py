"""A staticfiles finder for the Plotly bundle shipped inside the ``plotly`` Python package.

The dashboard must work on closed networks, so ``plotly.min.js`` is served by Weir itself
(``/static/vendor/plotly.min.js``) from the pinned ``plotly`` wheel instead of a CDN or a
copy committed to the repository. ``collectstatic`` picks it up through this finder too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_PATH = "vendor/plotly.min.js"
_PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"


class PlotlyFinder(BaseFinder):
    """Finds ``vendor/plotly.min.js`` in the installed ``plotly`` package."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=str(_PACKAGE_DATA))

    def check(self, **kwargs: Any) -> list[Any]:
        return []

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str]:
        if path != PLOTLY_PATH:
            return [] if find_all else ""
        found = str(_PACKAGE_DATA / "plotly.min.js")
        return [found] if find_all else found

    def list(self, ignore_patterns: Any) -> Iterator[tuple[str, Any]]:
        # collectstatic copies "plotly.min.js" from this storage to the prefixed path below.
        yield "plotly.min.js", _PrefixedStorage(self.storage)


class _PrefixedStorage:
    """Presents the package folder's file under ``vendor/`` to collectstatic."""

    def __init__(self, storage: FileSystemStorage) -> None:
        self._storage = storage
        self.prefix = "vendor"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)
