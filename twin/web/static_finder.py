"""Static files a capability ships in its own package (``<package>/static/``), found like ``frontend/``'s: a
capability outside twin/capabilities (``TWIN_EXTRA_CAPABILITIES``) brings its browser files with it, and its
``BROWSER`` paths resolve as any static path does."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from django.contrib.staticfiles.finders import FileSystemFinder
from django.core.files.storage import FileSystemStorage

from twin import discovery


class CapabilityFinder(FileSystemFinder):
    """Every capability package's ``static/`` folder, in discovery order."""

    def __init__(self, app_names=None, *args, **kwargs):
        super().__init__(app_names, *args, **kwargs)
        self.locations, self.storages = [], {}
        for package in discovery.packages():
            spec = importlib.util.find_spec(package)
            folder = Path(next(iter(spec.submodule_search_locations))) / "static" if spec else None
            if folder is not None and folder.is_dir():
                self.locations.append(("", str(folder)))
        for prefix, root in self.locations:
            storage = FileSystemStorage(location=root)
            storage.prefix = prefix
            self.storages[root] = storage

    def check(self, **kwargs):
        return []
