"""The navigation of the browser twin, as data: later capabilities (jobs, checkpoints, debugging) add their
views by appending a :class:`NavItem` (``register``) from their app's ``ready()``, without touching the template."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NavItem:
    key: str                  # matched against the page's ``nav`` context value to highlight the current section
    label: str
    url_name: str             # a URL name; cluster-scoped views take the cluster name as ``cluster``
    cluster_scoped: bool = False
    group: str = "twin"       # "twin": the cluster as built and as it behaves; "operations": what runs on it


NAV: list[NavItem] = [
    NavItem("overview", "Overview", "overview"),
    NavItem("fabric", "Fabric", "fabric", cluster_scoped=True),
    NavItem("gpus", "GPUs", "gpus", cluster_scoped=True),
    NavItem("experiments", "Experiments", "experiments"),
    NavItem("inventory", "Inventory", "inventory"),
]


def register(item: NavItem) -> None:
    """Add a section to the navigation (idempotent by key)."""
    if all(i.key != item.key for i in NAV):
        NAV.append(item)
