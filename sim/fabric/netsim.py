"""Flow-level network simulation: collectives (and any set of flows) over a :class:`sim.fabric.topology.Topology`.

Model
-----
Links. The fabric's ``E`` directed links (NIC-leaf, leaf-spine, spine-core, each direction at the cable's
achievable rate: :mod:`sim.fabric.achievable`, framing, the NIC's PCIe path) plus, per GPU, two virtual NVLink links
appended after them: egress ``E + g`` and ingress ``E + G + g``, each of the GPU's achievable NVLink rate per
direction (NCCL's per-link figure: 370.8 GB/s on an H100, whose line rate is 450), and per host its NVSwitch's
NVLS in and out (``E + 2G + h``, ``E + 2G + H + h``; :mod:`sim.fabric.flows`). A
transfer between two GPUs of one host crosses ``[E + src, E + G + dst]``; a transfer between hosts crosses the
routed path (:func:`sim.fabric.routing.route`), which starts at the sender's NIC uplink and ends at the receiver's NIC
downlink, so the NIC's 400 Gb/s is the first and last link. One solver handles both.

Queue pairs. An inter-host transfer is split round-robin over ``qps`` queue pairs: ``qps`` flows with
``qp = 0..qps-1`` of ``bytes / qps`` each. Whether they take different paths is the routing's business (5-tuple ECMP
hashes them alike, E-ECMP apart). NVLink transfers are one flow.

Rates. Max-min fair (:func:`sim.core.maxmin.max_min_rates`, exact) over the CSR flow x link incidence, solved once per
phase: every step of a ring has the same flows, so a ring of ``N - 1`` steps costs one solve. Flows on the same
links (QPs hashed onto one path, NVLink channels between one GPU pair) are solved once, as one weighted flow.

Time. A synchronous step ends when its slowest flow ends: ``max_f bytes_f / rate_f`` (its bandwidth term). A phase
of ``steps`` identical steps takes ``steps x`` that. A flow that would finish early does not speed the others up:
in NCCL's pipelined ring a hop cannot run ahead of the data its predecessor delivers, and the queue pairs of one
transfer carry equal bytes, so the slowest sets the pace (the steady state of the pipeline). Phases of uneven flows
(AllToAll) are solved event-driven by :func:`simulate_flows`: when flows finish they leave, the rest are re-solved.
Latency (per hop, by each hop's own path; NCCL's protocols: :mod:`sim.fabric.nccl_tuning`). A transfer between hosts
costs its one-way latency: the host/NIC part (half the base RTT less the switches of the path the RTT was measured
on, :class:`LatencyModel`) plus the latency of every switch on *its* routed path (``topo.link_latency``; the slowest
of its QPs). A phase's critical path follows its pipelines (:class:`sim.fabric.collectives.Phase`): a ring chunk crosses
``N - 1`` consecutive hops of its channel's ring, each at its own latency; channels run side by side, the slowest
sets the time. For protocol ``p`` every network hop adds NCCL's per-hop cost of ``p`` and every NVLink hop costs
NCCL's NVLink latency of ``p``; the collective adds NCCL's base latency of ``p`` once. Total time for message size
``S`` with protocol ``p``::

    T_p(S) = host + latency_p + S x factor / busbw_p,   busbw_p = min(limit_busbw x f_p, cap_p)

where ``host`` is the host-side floor of a call (``host_latency_us``, :mod:`sim.fabric.achievable`),
``limit_busbw`` (the bandwidth term) comes from the rates, ``factor`` is nccl-tests' busbw factor and
``f_p``, ``cap_p`` are NCCL's protocol bandwidth factor and cap (Simple: 1, none but NVLS-Tree's per-channel cap,
:func:`sim.fabric.nccl_tuning.sim_busbw`). The protocol is NCCL's choice for
``S`` from NCCL's own prediction (:func:`sim.fabric.nccl_tuning.choose`), or forced (``protocol``, as ``NCCL_PROTO``).
Rates do not depend on ``S`` or the protocol, so every message size costs nothing more once the phases are solved.

Outputs (nccl-tests conventions): algbw = S / T, busbw = algbw x factor (:func:`sim.fabric.collectives.busbw_factor`),
normalized busbw = busbw / roofline, where the *roofline* is the busbw of the same algorithm on the same number of
GPUs packed on whole hosts when only the endpoints limit it (NIC and NVLink bandwidth; the switch fabric ideal) and
latency is zero: :func:`roofline_busbw`. For a ring over 8-GPU hosts that is 8 x the NIC bandwidth (each of the 8
rails carries one channel), 400 GB/s on 400G NICs, what nccl-tests reports for multi-node rings on such hosts; for
AllToAll it is about one NIC's bandwidth. Per-link utilization = bytes carried / (capacity x T), the hottest links
with the flows that cross them, and every flow's rate.

Assumptions (configurable in :class:`LatencyModel`): base RTT 22 us on RoCE (Meta's measured base RTT: Gangidi et
al., SIGCOMM 2024, in docs/sources.md [S2]), taken as measured over the fabric's longest path (5 switches one way);
5 us on InfiniBand (assumption: NIC-to-NIC RDMA through one switch); the switches' latency is the topology's
(``sim.fabric.topology.DEFAULT_HOP_LATENCY``, 1 us per switch, assumption). NVLink and protocol costs are NCCL's
(docs/sources.md [S6]).
"""
from __future__ import annotations

import math
import time

import numpy as np

from sim.core.flowcore import simulate_flows
from sim.core.maxmin import link_loads, max_min_rates
from sim.core.progress import silent, span, weighted
from sim.core.flowset import FlowSet
from sim.core.units import GB, IDX
from sim.fabric.achievable import Efficiencies, arch, compute_capability, nvlink_rate, nvls_supported
from sim.fabric.collectives import (ALGORITHM_CHOICES, DTYPES, MAX_ALLTOALL_TRANSFERS, CollectiveError,
                                    CollectivePlan, Phase, canonical, element_count)
from sim.fabric.algorithms import plan as plan_collective
from sim.fabric.flows import CSR_CHUNK, build_flows, concat_flows, flow_count, link_capacity
from sim.fabric.latency import LatencyModel, critical_paths, path_latency, transfer_latency
from sim.fabric.chunking import nvls_one_node_fill
from sim.fabric.nccl import DEFAULT_UDP_SPORT, ring_channel_steps
from sim.fabric.netplugin import NCCL_IB, NetPlugin, chunk_config, net_plugin, plugin_hop, transport
from sim.fabric.ofi_tuner import tuner_choice
from sim.fabric.p2p_batches import alltoall_batches
from sim.fabric.nccl_tuning import (NCCL_ALGORITHMS, PROTOCOL_CHOICES, PROTOCOLS, SIMPLE, NcclComm, algo_time,
                                    base_latency, choose_algo, nvls_graph, sim_hop)
from sim.fabric.results import CollectiveResult, PhaseResult, SizeResult, hottest_links
from sim.fabric.roofline import packed_in_order, roofline_busbw
from sim.fabric.routing import resolve_routing
from sim.fabric.te import route_together

EVENT_MERGE = 1e-2             # event-driven phases merge completions within 1 % of the makespan's lower bound


def solve_phase(topo, phase: Phase, qps: int = 1, routing: str = "ecmp", seed: int = 0,
                latency: LatencyModel | None = None, router=None, capacity=None,
                background: list[Phase] | None = None, progress=None, *, hash: str = "uniform",
                udp_sport: str = DEFAULT_UDP_SPORT, qpn_base: int | None = None) -> PhaseResult:
    """Build, route and solve one phase (see the module docstring for the model; ``hash``, ``udp_sport`` and
    ``qpn_base`` as :func:`build_flows` takes them).

    ``background``: phases of other jobs that run at the same time (same routing and QPs; with ``routing="te"`` and
    no ``router`` the controller routes them together with this phase's flows); their flows share the
    links in the same max-min solve (and, for an event-driven phase, the same event simulation), but only this
    phase's flows set its time and appear in the result. ``progress``: a :mod:`sim.core.progress` callback; each flow
    is one unit of work when it is routed and one when its rate is fixed (solver rounds, or events finishing it).
    """
    latency = latency or LatencyModel()
    say = progress or silent
    t0 = time.perf_counter()
    links_of = path = None
    header = {"hash": hash, "udp_sport": udp_sport, "qpn_base": qpn_base}
    if routing == "te" and router is None:
        # The TE controller sees the whole traffic matrix: this phase's and the background jobs' flows are routed
        # in one decision, weighted by their bytes (sim/fabric/te.py).
        flows, *others = route_together(topo, [phase] + list(background or []),
                                        lambda ph, r: build_flows(topo, ph, qps, routing, seed, r, **header), seed)
    else:
        flows = build_flows(topo, phase, qps, routing, seed, router, **header)
        others = [build_flows(topo, b, qps, routing, seed, router, **header) for b in (background or [])]
    everything = concat_flows([flows] + others)
    mine = flows.n_flows
    say(0.5, f"phase {phase.name}: {everything.n_flows:,} flows routed ({routing}, {qps} QP), solving their rates")
    solving = span(progress, 0.5, 1.0)
    capacity = link_capacity(topo) if capacity is None else capacity
    finish_unit = None
    if phase.mode == "event":
        # Lower bound of the makespan: the most loaded link's bytes over its capacity.
        load = link_loads(everything.ptr, everything.links, everything.share, capacity.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = float(np.nanmax(np.where(capacity > 0, load / capacity, 0.0)))
        sim = simulate_flows(everything.ptr, everything.links, capacity, everything.share,
                             merge=EVENT_MERGE * bound, progress=solving)
        rates, finish_unit = sim.first_rate[:mine], sim.finish[:mine]
        unit = float(finish_unit.max()) if mine else 0.0
    else:
        rates, cls, cptr, clinks, size = _solve_classes(everything, capacity, solving)
        rates, cls = rates[:mine], cls[:mine]
        unit = phase.steps * _slowest(flows.share, rates) if rates.size else 0.0
        # This phase's bytes and flows on each link and each flow's path latency, per class of identical flows
        # (a class's flows cross the same links).
        links_of = _link_totals(cptr, clinks, cls, flows.share, phase.steps, None if mine < everything.n_flows
                                else size, capacity.size)
        first = flows.n_network_first                 # only network flows have a path latency to keep
        path = path_latency(topo, cptr, clinks)[cls if first is None else cls[:first]]
    hop, network = transfer_latency(topo, phase, flows, latency, path)
    say(1.0, f"phase {phase.name}: {everything.n_flows:,} flows routed ({routing}, {qps} QP) and solved in "
        f"{time.perf_counter() - t0:.2f} s")
    return PhaseResult(phase=phase, flows=flows, rates=rates, unit_time=unit, hop_latency=hop, hop_network=network,
                       finish_unit=finish_unit, solve_seconds=time.perf_counter() - t0, link_source=links_of)


def _link_totals(cptr, clinks, cls, share, steps, size, n_links):
    """The phase's bytes per byte of message size and flows on each link (``PhaseResult.link_unit_bytes`` and
    ``link_flows``), from its classes of identical flows (a class's flows cross the same links), as a function
    called when they are first read; ``size``: flows per class (None: count this phase's flows, background flows
    sharing the classes)."""
    def totals():
        K = cptr.size - 1
        unit = link_loads(cptr, clinks, np.bincount(cls, share, minlength=K) * steps, n_links)
        count = np.bincount(cls, minlength=K) if size is None else size
        return unit, np.rint(link_loads(cptr, clinks, count, n_links)).astype(IDX)
    return totals


def _slowest(share: np.ndarray, rates: np.ndarray) -> float:
    """The largest ``share / rate`` over flows (``inf`` for a flow of rate 0): a step's time per byte of message.
    Taken in slices of :data:`CSR_CHUNK` flows, so no per-flow temporary is made (17.7M flows at 600k)."""
    worst = -np.inf
    for lo in range(0, rates.size, CSR_CHUNK):
        r = rates[lo:lo + CSR_CHUNK]
        with np.errstate(divide="ignore", invalid="ignore"):
            worst = np.maximum(worst, np.where(r > 0, share[lo:lo + CSR_CHUNK] / r, np.inf).max())
    return float(worst)


def merged_rates(flows: FlowSet, capacity: np.ndarray, progress) -> np.ndarray:
    """Max-min rates of ``flows``, solved once per class of flows on the same links (QPs hashed onto one path,
    NVLink transfers of several channels between one GPU pair): identical flows get identical rates, so the
    weighted solve of the classes (:meth:`sim.core.flowset.FlowSet.classes`) gives the rates of every flow."""
    return _solve_classes(flows, capacity, progress)[0]


def _solve_classes(flows: FlowSet, capacity: np.ndarray, progress):
    """``(rates, cls, ptr, links, weight)``: :func:`merged_rates`, with each flow's class, the classes' CSR paths
    and their sizes (flows per class)."""
    rep, cls = flows.classes()
    starts = flows.ptr[rep]
    deg = flows.ptr[rep + 1] - starts                   # the classes' path lengths (no diff over every flow)
    ptr = np.zeros(rep.size + 1, dtype=IDX)
    np.cumsum(deg, out=ptr[1:])
    links = flows.links[np.arange(ptr[-1], dtype=IDX) + np.repeat(starts - ptr[:-1], deg)]
    weight = np.bincount(cls, minlength=rep.size)
    return max_min_rates(ptr, links, capacity, progress=progress, weight=weight)[cls], cls, ptr, links, weight


def pipeline_fill(res: PhaseResult, ops: float = 1.0, nvlink_channel_rate: float = np.inf,
                  network_only: bool = False) -> float:
    """Seconds per chunk byte that a Simple chunk spends filling ``res``'s pipeline (:mod:`sim.fabric.chunking`):
    along the phase's critical path (its latency pipelines: chains and trees walked to their end), the sum over its
    transfers of the time a byte of a chunk takes on each, less the slowest transfer's (the steady state the rates
    already give). A network transfer's time per byte is its slowest flow's at the solved rates, the NIC being
    shared by every channel's first chunks at once; ``ops``: the chunk streams one transfer carries side by side
    (NCCL's concurrent operations), each at its share of the transfer's rate. An NVLink hop, idle but for the
    chunk while the pipeline fills, moves it at one channel's rate (``nvlink_channel_rate``: NCCL's per-channel
    share of the GPU's NVLink), or faster where the solved rate is. 0 for phases that are not pipelines to the
    end (rings, AllToAll, PAT, single-host NVLS).

    ``network_only``: the fill of LL and LL128, which stream line by line over NVLink but are stored and forwarded
    a step at a time at each network hop (NCCL's send proxy posts a step only once the GPU has written all of it,
    ``sendProxyProgress`` in ``src/transport/net.cc`` [S210]): the sum over the critical path's network transfers
    only, less the slowest transfer's where that is one of them."""
    ph = res.phase
    if ph.mode != "sync" or ph.lat_next is None or ph.lat_span != 0 or res.rates.size == 0:
        return 0.0
    P = len(ph.src)
    per = np.zeros(P)
    with np.errstate(divide="ignore", invalid="ignore"):
        flow_time = np.where(res.rates > 0, res.flows.share / res.rates, np.inf)
    np.maximum.at(per, res.flows.transfer, flow_time)
    per = per / np.asarray(ph.share, dtype=np.float64) * float(ops)
    nvl = ~np.asarray(res.hop_network, dtype=bool)
    per[nvl] = np.minimum(per[nvl], 1.0 / nvlink_channel_rate)
    if not np.isfinite(per).all():
        return 0.0
    top = float(per.max())
    if network_only:
        per = np.where(nvl, 0.0, per)
        top = top if float(per.max()) >= top else 0.0
    (sec, _, _), = critical_paths(ph, per, np.zeros(P, dtype=bool), [(0.0, 0.0)])
    return max(sec - top, 0.0)


def protocol_latencies(plan: CollectivePlan, phases: list[PhaseResult], latency: LatencyModel | None = None,
                       plugin: NetPlugin = NCCL_IB, scale: float = 1.0, rounds: int = 1):
    """Per protocol: the collective's latency (seconds) = NCCL's base latency + the sum over phases of the critical
    path, each network hop at its one-way latency + the protocol's per-hop cost (+ the network plugin's,
    :func:`sim.fabric.netplugin.plugin_hop`, times ``scale``), each NVLink hop at the protocol's NVLink latency
    (:func:`sim.fabric.nccl_tuning.sim_hop`; ``latency.nvlink`` overrides it), taken ``rounds`` times in sequence
    (an AllToAll's point-to-point batches, :func:`p2p_rounds`); and the (network, NVLink) hops on it. Fills each
    phase's ``latency`` and ``critical_hops``."""
    latency = latency or LatencyModel()
    costs = []
    for proto in PROTOCOLS:
        extra, nvl = sim_hop(plan.algorithm, proto, plan.n_ranks, plan.n_hosts)
        extra += plugin_hop(plugin, proto, scale)
        costs.append((extra, nvl if latency.nvlink is None else float(latency.nvlink)))
    out = {p: base_latency(plan.algorithm, p, plan.n_ranks, plan.n_hosts) for p in PROTOCOLS}
    hops = {p: (0, 0) for p in PROTOCOLS}
    for ph in phases:
        for proto, (sec, a, b) in zip(PROTOCOLS, critical_paths(ph.phase, ph.hop_latency, ph.hop_network, costs)):
            sec, a, b = sec * rounds, a * rounds, b * rounds
            ph.latency[proto], ph.critical_hops[proto] = sec, (a, b)
            out[proto] += sec
            hops[proto] = (hops[proto][0] + a, hops[proto][1] + b)
    return out, hops


def p2p_rounds(topo, plan: CollectivePlan, channels: int | None = None, min_channels: int | None = None,
               max_channels: int | None = None) -> int:
    """Latency hops an AllToAll's critical path takes in sequence: the point-to-point work batches one of NCCL's
    channels runs one after the other (:func:`sim.fabric.p2p_batches.alltoall_batches`, with NCCL's channel count
    and, on EFA, the per-GPU NIC's ports as the network cards NCCL counts); 1 for the other collectives.
    NCCL's channel count is the run's: ``channels`` where forced, else NCCL's under ``min_channels`` /
    ``max_channels`` (NCCL_MIN/MAX_NCHANNELS set ``comm->nChannels``, from which ``p2pnChannels`` follows)."""
    if plan.collective != "alltoall" or plan.n_hosts <= 1:
        return 1
    per_host = int(np.bincount(np.asarray(topo.gpu_host)).max())
    m = min(per_host, -(-plan.n_ranks // plan.n_hosts))
    if channels is None:
        channels = ring_channel_steps(m, plan.n_hosts, nic_gbps=topo.nic_bandwidth / GB,
                                      min_channels=min_channels, max_channels=max_channels).final
    nic = getattr(topo, "nic_model", None) or {}
    cards = int(nic.get("ports") or 1) if transport(topo) == "efa" else 1
    return alltoall_batches(plan.n_ranks, plan.n_hosts, channels, cards)


def run_collective(topo, gpus, collective: str, sizes, *, algorithm: str = "ring", routing: str | None = None,
                   qps: int = 1, seed: int = 0, dtype: str = "float", latency: LatencyModel | None = None,
                   channels: int | None = None, root: int = 0, weights=None, max_flows: int | None = None,
                   hottest: int = 10, flows_per_link: int = 5, background=None, progress=None,
                   router=None, intra_order: str = "gpu", protocol: str = "auto", hash: str = "uniform",
                   udp_sport: str = DEFAULT_UDP_SPORT, qpn_base: int | None = None, min_channels: int | None = None,
                   max_channels: int | None = None, efficiencies: Efficiencies | None = None,
                   collnet: bool = False) -> CollectiveResult:
    """Simulate ``collective`` over the ranks ``gpus`` (rank -> GPU) of ``topo`` for each message size in
    ``sizes`` (bytes); see the module docstring for the model and :class:`CollectiveResult` for the outputs.

    ``routing``: one of :data:`sim.fabric.routing.ROUTINGS` (default: the fabric's, :func:`sim.fabric.routing.default_routing`);
    ``qps``: queue pairs per NCCL connection (``NCCL_IB_QPS_PER_CONNECTION``; a channel's hop between hosts is one
    connection); ``channels``: NCCL channels (default: NCCL's own count for the job's hosts,
    :func:`sim.fabric.nccl.ring_channels`, under ``min_channels`` / ``max_channels``, ``NCCL_MIN/MAX_NCHANNELS``);
    ``hash``: the switches' hash (:data:`sim.fabric.hashing.HASHES`); ``udp_sport``: how QPs get their UDP source port
    (:data:`sim.fabric.nccl.UDP_SPORT_MODES`); ``qpn_base``: one first QP number for every NIC (default: per NIC from the
    seed); ``seed``: the routing hash seed; ``protocol``: ``"auto"`` (NCCL's choice per
    size) or one of :data:`sim.fabric.nccl_tuning.PROTOCOLS` (forced, as ``NCCL_PROTO``); ``progress``: a
    :mod:`sim.core.progress` callback
    ``(fraction, message)``: each phase's share is its flows (background jobs' included), within it routing them
    then fixing their rates (:func:`solve_phase`), so the fraction grows with the work done and ends at 1.0.
    ``background``: placements (rank -> GPU arrays) of other jobs running the same collective at the same time on
    the same fabric (disjoint GPUs); their traffic shares the links (their phase ``i`` runs beside this job's phase
    ``i``) but only this job is timed and reported. ``intra_order``: a host's GPUs in the rings in GPU order
    (NCCL's topology search) or in rank order (:func:`sim.fabric.collectives.host_groups`). ``algorithm``: one of
    :data:`sim.fabric.collectives.ALGORITHMS` (forced, as ``NCCL_ALGO``) or ``"auto"``: NCCL's choice of algorithm
    and protocol per size by its own tuning model (:func:`sim.fabric.nccl_tuning.choose_algo`), each algorithm
    chosen for some size simulated once (:func:`run_auto`). ``efficiencies``: the fitted factors in effect
    (:class:`sim.fabric.achievable.Efficiencies`; default their fitted values). ``collnet``: NCCL's CollNet
    plugin is loaded (``NCCL_COLLNET_ENABLE=1``): ``auto`` may then choose CollNet where the fabric has SHARP
    (:func:`fabric_sharp`); forcing ``collnet_direct`` / ``collnet_chain`` enables it. Raises CollectiveError for
    impossible requests and :class:`sim.fabric.paths.NoPathError` when a flow has no active path.
    """
    say = progress or silent
    t_start = time.perf_counter()
    gpus = np.asarray(gpus, dtype=IDX)
    if gpus.size < 2:
        raise CollectiveError(f"a collective needs at least 2 GPUs, got {gpus.size}")
    if gpus.min() < 0 or gpus.max() >= topo.n_gpus:
        raise CollectiveError(f"GPU ids must lie in 0..{topo.n_gpus - 1}")
    if not np.asarray(topo.gpu_usable)[gpus].all():
        bad = gpus[~np.asarray(topo.gpu_usable)[gpus]]
        raise CollectiveError(f"{bad.size} GPUs of the placement are not usable (first: GPU {int(bad[0])})")
    if dtype not in DTYPES:
        raise CollectiveError(f"unknown type {dtype!r}")
    sizes = [int(s) for s in np.atleast_1d(sizes)]
    if not sizes or min(sizes) < 0:
        raise CollectiveError("message sizes must be non-negative byte counts")
    routing = resolve_routing(routing, topo.kind)
    latency = latency or LatencyModel()
    eff = efficiencies or Efficiencies.of()
    if protocol not in PROTOCOL_CHOICES:
        raise CollectiveError(f"unknown protocol {protocol!r}: choose one of {', '.join(PROTOCOL_CHOICES)}")
    if algorithm not in ALGORITHM_CHOICES and algorithm != "direct":
        raise CollectiveError(f"unknown algorithm {algorithm!r}: choose one of {', '.join(ALGORITHM_CHOICES)}")
    kw = dict(routing=routing, qps=qps, seed=seed, dtype=dtype, latency=latency, channels=channels, root=root,
              weights=weights, max_flows=max_flows, hottest=hottest, flows_per_link=flows_per_link,
              background=background, progress=progress, router=router, intra_order=intra_order, protocol=protocol,
              hash=hash, udp_sport=udp_sport, qpn_base=qpn_base, min_channels=min_channels,
              max_channels=max_channels, efficiencies=eff, collnet=collnet)
    if algorithm == "auto":
        if canonical(collective) == "alltoall":
            algorithm = "ring"                         # AllToAll has one algorithm (point-to-point)
        else:
            return run_auto(topo, gpus, collective, sizes, t_start=t_start, **kw)
    if algorithm in ("nvls", "nvls_tree", "pat", "collnet_direct", "collnet_chain") \
            and protocol not in ("auto", SIMPLE):
        raise CollectiveError(f"NCCL runs {algorithm} with the Simple protocol only, not {protocol}")
    nccl = {"min_channels": min_channels, "max_channels": max_channels, "nic_bandwidth": topo.nic_bandwidth,
            "nvls": nvls_supported(topo), "sharp": fabric_sharp(topo)}
    plan = plan_collective(collective, gpus, topo.gpu_host, algorithm, channels=channels, root=root,
                           weights=weights, max_flows=max_flows or MAX_ALLTOALL_TRANSFERS, intra_order=intra_order,
                           **nccl)
    say(0.0, f"planned {plan.collective} ({plan.algorithm}) over {plan.n_ranks} ranks on {plan.n_hosts} hosts, "
        f"{plan.channels} channels, {plan.n_transfers:,} transfers")
    uses_sharp = plan.algorithm.startswith("collnet")
    others = []
    for bg in background or []:
        bg = np.asarray(bg, dtype=IDX)
        if bg.size >= 2:
            others.append(plan_collective(collective, bg, topo.gpu_host, algorithm, channels=channels,
                                          max_flows=max_flows or MAX_ALLTOALL_TRANSFERS, **nccl).phases)
    if others:
        taken = np.concatenate([gpus] + [np.asarray(b, dtype=IDX) for b in background])
        if np.unique(taken).size != taken.size:
            raise CollectiveError("background jobs must not share GPUs with the job or with each other")
        say(0.0, f"background: {len(others)} other jobs, {sum(len(b) for b in background):,} GPUs")
    # The NVSwitch serves NVLS per GPU port: its rate counts the GPUs that run the collective (flows.link_capacity).
    in_use = np.concatenate([gpus] + [np.asarray(b, dtype=IDX) for b in background or []])
    capacity = link_capacity(topo, eff, sharp=uses_sharp, nvls_gpus=in_use)
    phases = []
    with_bg = [[ph] + [o[i] for o in others if i < len(o)] for i, ph in enumerate(plan.phases)]
    shares = weighted(progress, [sum(flow_count(topo, p, qps) for p in group) for group in with_bg]) \
        if progress is not None else [None] * len(with_bg)     # nobody told: no need to count the flows
    for i, (ph, *bg_phases) in enumerate(with_bg):
        phases.append(solve_phase(topo, ph, qps, routing, seed, latency, router, capacity, bg_phases, shares[i],
                                  hash=hash, udp_sport=udp_sport, qpn_base=qpn_base))
    link_bytes = np.zeros(capacity.size)
    for res in phases:
        link_bytes += res.link_unit_bytes if res.link_unit_bytes is not None else \
            link_loads(res.flows.ptr, res.flows.links, res.flows.share * res.phase.steps, capacity.size)
    chunking = chunk_config(topo, plan.n_hosts)
    ops = chunking.nvls_channels / 2 if plan.algorithm == "nvls_tree" else 1.0   # a head's channels, both trees
    per_channel = nvlink_rate(topo, eff) / max(plan.channels, 1)
    for res in phases:
        res.fill, res.chunk_ops = pipeline_fill(res, ops, per_channel), ops
        res.fill_net = pipeline_fill(res, ops, per_channel, network_only=True)
    if plan.algorithm == "nvls" and plan.n_hosts == 1 and phases:      # the kernel's warp-group stages
        res = phases[0]
        res.fill, res.chunk_ops = nvls_one_node_fill(plan.collective, plan.n_ranks, res.unit_time,
                                                     float(np.max(res.phase.share)), chunking)
    gph = int(np.bincount(np.asarray(topo.gpu_host)).max())
    packed = weights is None and root == 0 and packed_in_order(gpus, topo.gpu_host, gph)
    roof = roofline_busbw(plan.collective, plan.n_ranks, gph, topo.nic_bandwidth, topo.nvlink_bandwidth,
                          plan.algorithm, plan.channels, plan if packed else None, nvls=nccl["nvls"],
                          sharp=nccl["sharp"])
    factor = plan.busbw_factor
    latencies, hops = protocol_latencies(plan, phases, latency, net_plugin(topo), eff.efa_latency,
                                         p2p_rounds(topo, plan, channels, min_channels, max_channels))
    ring_roof = roof if plan.n_hosts > 1 and plan.algorithm in ("ring", "tree", "pat") else None
    result = CollectiveResult(plan=plan, kind=topo.kind, routing=routing, qps=qps, seed=seed, dtype=dtype,
                              roofline=roof, rows=[], phases=phases, link_unit_bytes=link_bytes,
                              link_capacity=capacity, n_fabric=topo.n_links, protocol=protocol,
                              latencies=latencies, critical_hops=hops, hash=hash,
                              udp_sport=udp_sport, host_latency=eff.host_latency,
                              nccl_comm=nccl_comm(topo, gpus, plan.channels, ring_roof,
                                                  collnet=collnet or uses_sharp),
                              algorithm_choice=plan.algorithm, chunking=chunking)
    for s in sizes:
        proto = result.protocol_for(s)
        t = result.time(s, proto)
        algbw = s / t if t > 0 else 0.0
        result.rows.append(SizeResult(size=s, count=element_count(plan.collective, s, plan.n_ranks, dtype), time=t,
                                      algbw=algbw, busbw=algbw * factor, norm=algbw * factor / roof,
                                      protocol=proto, predicted=result.predicted(s, proto),
                                      algorithm=plan.algorithm))
    result.hottest = hottest_links(topo, result, hottest, flows_per_link)
    result.seconds = {"total": time.perf_counter() - t_start,
                      "phases": [round(p.solve_seconds, 4) for p in phases]}
    return result


def fabric_sharp(topo) -> bool:
    """Whether the fabric's switches reduce in the network (InfiniBand SHARP, NCCL's CollNet): the topology's
    ``sharp`` (:func:`sim.fabric.topology.fabric_sharp`: an InfiniBand backend whose every switch tier's catalog
    model has ``sharp = true``). NCCL offers CollNet only with it and the CollNet plugin (the collective's
    ``collnet`` parameter, NCCL_COLLNET_ENABLE; docs/engine.md, "NCCL's algorithms")."""
    return bool(getattr(topo, "sharp", False))


def nccl_comm(topo, gpus, channels: int, ring_bw: float | None = None, collnet: bool = False) -> NcclComm:
    """What NCCL's tuning model knows of the job (:class:`sim.fabric.nccl_tuning.NcclComm`): ranks, nodes, ring
    channels; the ring graph's bandwidth (``ring_bw``, bytes/s: across nodes the roofline (the NICs), as before;
    inside one node NCCL's own NVLink rate, links x its per-link constant); the NVLS graph
    (:func:`sim.fabric.nccl_tuning.nvls_graph`); CollNet (``sharp``) where the fabric has SHARP and the CollNet
    plugin is loaded (``collnet``, NCCL_COLLNET_ENABLE: NCCL disables CollNet without it, tuning.cc)."""
    gpus = np.asarray(gpus, dtype=IDX)
    per_host = np.unique(np.asarray(topo.gpu_host)[gpus], return_counts=True)[1]
    n_nodes, m = int(per_host.size), int(per_host.max())
    nvl = nvlink_rate(topo, Efficiencies(nvlink=1.0))            # NCCL's own NVLink figure, no fitted factor
    if ring_bw is None:
        ring_bw = nvl if n_nodes == 1 else m * min(topo.nic_bandwidth, nvl)
    nic_speed = ring_channel_steps(m, n_nodes, nic_gbps=topo.nic_bandwidth / GB).speed
    ch, intra, inter = nvls_graph(m, nvl / GB, nic_speed, n_nodes)
    plugin = net_plugin(topo)
    across = n_nodes > 1                                         # the plugin only acts on network connections
    # Before Hopper NCCL searches its tree as a balanced tree, which counts half a channel's bandwidth on the NIC
    # of each of the node's first two GPUs (search.cc): a NIC-bound tree graph carries twice the ring's, up to
    # the GPUs' NVLink (Hopper searches a plain tree: the ring's).
    tree_bw = min(2.0 * ring_bw, m * nvl) if across and compute_capability(topo) < 90 else 0.0
    return NcclComm(n_ranks=int(gpus.size), n_nodes=n_nodes, channels=int(channels), ring_bw=float(ring_bw),
                    arch=arch(topo), nvls=nvls_supported(topo), nvls_channels=ch, nvls_bw_intra=intra,
                    nvls_bw_inter=inter, sharp=bool(collnet) and fabric_sharp(topo),
                    equal_nodes=bool((per_host == m).all()),
                    latency_inter=plugin.latency_us if across else 0.0, tree_bw=float(tree_bw),
                    protocols=plugin.protocols if across else PROTOCOLS)


def _tuned(topo, name: str, size: int, comm: NcclComm, algorithms, protocols) -> tuple[str, str] | None:
    """The network plugin's tuner's (algorithm, protocol) for ``size`` bytes (:mod:`sim.fabric.ofi_tuner`), or
    None where NCCL's own model decides. A pair NCCL does not run here (its cost table says IGNORE: protocol
    disabled by the plugin or ``NCCL_PROTO``, NVLS unsupported, algorithm not simulated) is skipped, as the tuner
    skips it."""
    def allowed(a: str, p: str) -> bool:
        return (a in algorithms and (protocols is None or p in protocols)
                and math.isfinite(algo_time(name, a, p, size, comm)))
    tuner = net_plugin(topo).tuner if comm.n_nodes > 1 else None
    return tuner_choice(tuner, name, size, comm.n_ranks, comm.n_nodes, allowed)


def run_auto(topo, gpus, collective: str, sizes, *, t_start: float, **kw) -> CollectiveResult:
    """``algorithm="auto"``: NCCL's choice of algorithm and protocol for each size by its tuning model
    (:func:`sim.fabric.nccl_tuning.choose_algo`, with the protocol forced if ``protocol`` is; the network
    plugin's tuner's where it has one and a region holds the size, :func:`_tuned`), each chosen
    algorithm simulated once by :func:`run_collective`; each row is its algorithm's time with its protocol. The
    result is the run of the algorithm chosen for the largest size (its plan, phases, hottest links) with the
    rows of all."""
    gpus = np.asarray(gpus, dtype=IDX)
    name = canonical(collective)
    protocol = kw["protocol"]
    channels = kw.get("channels") or ring_channel_steps(
        int(np.unique(np.asarray(topo.gpu_host)[gpus], return_counts=True)[1].max()),
        int(np.unique(np.asarray(topo.gpu_host)[gpus]).size), nic_gbps=topo.nic_bandwidth / GB,
        min_channels=kw.get("min_channels"), max_channels=kw.get("max_channels")).final
    comm = nccl_comm(topo, gpus, channels, collnet=kw.get("collnet", False))
    protocols = None if protocol == "auto" else (protocol,)
    sizes = [int(s) for s in np.atleast_1d(sizes)]
    try:
        # CollNet is among NCCL's choices only with SHARP and the plugin (comm.sharp); NVLS across nodes (NVLS with
        # CollNet) has no phases here, so it is never chosen.
        simulated = tuple(a for a in NCCL_ALGORITHMS if not (a == "nvls" and comm.n_nodes > 1))
        chosen = {s: _tuned(topo, name, s, comm, simulated, protocols)
                  or choose_algo(name, s, comm, algorithms=simulated, protocols=protocols) for s in set(sizes)}
    except ValueError as e:
        raise CollectiveError(str(e)) from None
    order = []
    for s in sorted(sizes, reverse=True):            # the largest size's algorithm first: the main result
        if chosen[s][0] not in order:
            order.append(chosen[s][0])
    runs = {}
    shares = weighted(kw["progress"], [1] * len(order)) if kw["progress"] is not None else [None] * len(order)
    for a, share in zip(order, shares):
        runs[a] = run_collective(topo, gpus, name, sizes, algorithm=a, **dict(kw, progress=share))
    main = runs[order[0]]
    rows = []
    for s in sizes:
        a, p = chosen[s]
        r = runs[a]
        t = r.time(s, p)
        algbw = s / t if t > 0 else 0.0
        busbw = algbw * r.plan.busbw_factor
        rows.append(SizeResult(size=s, count=element_count(name, s, r.plan.n_ranks, r.dtype), time=t, algbw=algbw,
                               busbw=busbw, norm=busbw / r.roofline, protocol=p,
                               predicted=algo_time(name, a, p, s, comm), algorithm=a))
    main.rows = rows
    main.algorithm_choice = "auto"
    main.by_algorithm = {a: r.limit_busbw for a, r in runs.items()}
    main.seconds = {"total": time.perf_counter() - t_start,
                    "phases": [x for r in runs.values() for x in r.seconds.get("phases", [])]}
    return main
