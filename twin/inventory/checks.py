"""Verify a built cluster against its spec and against physics: set-based queries, each violation listed.

Checks: every GPU reaches its backend NIC and through it a switch port; every port is used by at most one link and
lies within its device model's port count; link speeds match both ends (and the cable); every switch has the
downlinks and uplinks its tier has in the spec, toward the tiers the spec connects; item counts per kind and tier
equal the spec's expansion. Status is not checked: a failed link is still a link.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db.models import Count, F, Q

from sim.fabric.layout import expand
from sim.fabric.spec import parse_spec
from twin.inventory.builder import item_names
from twin.inventory.models import (
    GPU, NIC, SSD, Cluster, Host, Link, Port, Rack, StorageServer, Switch, Zone,
)


@dataclass(frozen=True)
class Violation:
    check: str
    item: str
    message: str

    def __str__(self):
        return f"[{self.check}] {self.item}: {self.message}"


def _gpu_reaches_switch(c: Cluster):
    for name in GPU.objects.filter(cluster=c, nic__isnull=True).values_list("name", flat=True):
        yield Violation("gpu-nic", name, "has no backend NIC")
    for name in NIC.objects.filter(cluster=c, ports__isnull=True).values_list("name", flat=True):
        yield Violation("nic-port", name, "has no port")
    uncabled = Port.objects.filter(cluster=c, nic__isnull=False, link_as_a__isnull=True, link_as_b__isnull=True)
    for name in uncabled.values_list("name", flat=True):
        yield Violation("nic-cabled", name, "is a NIC port with no link")
    nic_to_nic = Link.objects.filter(cluster=c, a_port__nic__isnull=False, b_port__nic__isnull=False)
    for name in nic_to_nic.values_list("name", flat=True):
        yield Violation("nic-cabled", name, "joins two NIC ports, not a NIC to a switch")


def _ports(c: Cluster):
    reused = Port.objects.filter(cluster=c, link_as_a__isnull=False, link_as_b__isnull=False)
    for name in reused.values_list("name", flat=True):
        yield Violation("port-reuse", name, "is an end of two links")
    over = (Port.objects.filter(cluster=c, switch__isnull=False, slot__gte=F("switch__model__ports"))
            .values_list("name", "switch__model__slug", "switch__model__ports"))
    for name, model, ports in over:
        yield Violation("port-range", name, f"is beyond the {ports} ports of model {model}")
    over = (Port.objects.filter(cluster=c, nic__isnull=False, slot__gte=F("nic__model__ports"))
            .values_list("name", "nic__model__slug", "nic__model__ports"))
    for name, model, ports in over:
        yield Violation("port-range", name, f"is beyond the {ports} ports of model {model}")


def _cached_ends(c: Cluster):
    stale = (Link.objects.filter(cluster=c)
             .filter(~Q(b_switch_id=F("b_port__switch_id"))
                     | Q(a_port__switch__isnull=False) & (Q(a_switch__isnull=True)
                                                          | ~Q(a_switch_id=F("a_port__switch_id")))
                     | Q(a_port__switch__isnull=True, a_switch__isnull=False))
             .values_list("name", flat=True))
    for name in stale:
        yield Violation("link-ends", name, "caches switches that are not those of its ports")


def _link_speeds(c: Cluster):
    bad = (Link.objects.filter(cluster=c)
           .filter(~Q(speed_gbps=F("a_port__speed_gbps")) | ~Q(speed_gbps=F("b_port__speed_gbps"))
                   | Q(speed_gbps__gt=F("cable__speed_gbps")))
           .values_list("name", "speed_gbps", "a_port__speed_gbps", "b_port__speed_gbps", "cable__speed_gbps"))
    for name, speed, a, b, cable in bad:
        yield Violation("link-speed", name, f"runs at {speed}G between ports of {a}G and {b}G on a {cable}G cable")
    for end in ("a_port", "b_port"):
        fast = (Link.objects.filter(cluster=c, **{f"{end}__switch__isnull": False})
                .filter(speed_gbps__gt=F(f"{end}__switch__model__speed_gbps"))
                .values_list("name", "speed_gbps", f"{end}__switch__model__slug"))
        for name, speed, model in fast:
            yield Violation("link-speed", name, f"runs at {speed}G, faster than switch model {model}")


def _switch_links(c: Cluster, layout, names):
    """Each switch's downlink and uplink counts, and the tiers at the far ends, against the spec's expansion."""
    expected_down = Counter(layout.port_switch[layout.link_b].tolist())
    expected_up = Counter(layout.port_switch[layout.link_a][layout.port_switch[layout.link_a] >= 0].tolist())
    expected = {name: (expected_down[i], expected_up[i]) for i, name in enumerate(names["switch"])}
    down = dict(Link.objects.filter(cluster=c).values_list("b_port__switch__name").annotate(n=Count("id"))
                .order_by())
    up = dict(Link.objects.filter(cluster=c, a_port__switch__isnull=False).values_list("a_port__switch__name")
              .annotate(n=Count("id")).order_by())
    for name in Switch.objects.filter(cluster=c).values_list("name", flat=True):
        want = expected.get(name)
        if want is None:
            yield Violation("switch-links", name, "is not in the spec")
            continue
        got = (down.get(name, 0), up.get(name, 0))
        if got != want:
            yield Violation("switch-links", name, f"has {got[0]} downlinks and {got[1]} uplinks; "
                                                  f"the spec gives {want[0]} and {want[1]}")
    wrong_tier = (Link.objects.filter(cluster=c)
                  .filter(~Q(b_port__switch__tier=F("tier")) | ~Q(b_port__switch__fabric=F("fabric"))
                          | (Q(a_port__switch__isnull=False) & (~Q(a_port__switch__tier=F("tier") - 1)
                                                                | ~Q(a_port__switch__fabric=F("fabric")))))
                  .values_list("name", flat=True))
    for name in wrong_tier:
        yield Violation("switch-links", name, "joins tiers or fabrics that the spec does not connect")


def _counts(c: Cluster, layout):
    want = layout.counts()
    got = {"zones": Zone.objects.filter(cluster=c).count()}
    for key, model in (("racks", Rack), ("hosts", Host), ("gpus", GPU), ("storage_servers", StorageServer),
                       ("ssds", SSD), ("nics", NIC), ("switches", Switch), ("ports", Port), ("links", Link)):
        got[key] = model.objects.filter(cluster=c).count()
    for (fabric, tier), role in layout.tier_names.items():
        got[f"switches.{role}"] = Switch.objects.filter(cluster=c, fabric__role=fabric, tier=tier).count()
    for (fabric, tier), name in layout.link_tier_names().items():
        got[f"links.{name}"] = Link.objects.filter(cluster=c, fabric__role=fabric, tier=tier).count()
    for key, n in want.items():
        if got.get(key) != n:
            yield Violation("counts", key, f"{got.get(key)} in the inventory; the spec gives {n}")


def check_cluster(cluster: Cluster) -> list[Violation]:
    """All violations of ``cluster`` (an empty list when it is sound)."""
    layout = expand(parse_spec(cluster.spec))
    names = item_names(layout, [s.name for s in layout.spec.storage])
    violations = []
    for check in (_gpu_reaches_switch(cluster), _ports(cluster), _cached_ends(cluster), _link_speeds(cluster),
                  _switch_links(cluster, layout, names), _counts(cluster, layout)):
        violations.extend(check)
    return violations
