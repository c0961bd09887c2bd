"""Switch hash functions (sim/fabric/hashing.py): the CRCs against independent implementations (zlib, binascii), the
per-switch seed, and how a CRC spreads consecutive QP numbers. Given / when / then."""
import binascii
import doctest
import struct
import zlib

import numpy as np
import pytest

import sim.fabric.hashing
from sim.fabric.hashing import (ROCE_UDP_DPORT, SwitchHash, crc16, crc32, header_bytes, nic_ips, switch_seeds)
from sim.fabric.layout import expand
from sim.fabric.paths import routing_tables
from sim.fabric.routing import route
from sim.fabric.spec import load_spec
from sim.fabric.topology import topology_from_layout


@pytest.fixture(scope="module")
def demo():
    return topology_from_layout(expand(load_spec("demo-256")))


def packed(seed, sip, dip, sport, dqpn=None) -> bytes:
    """The header bytes as sim/fabric/hashing.py documents them, packed independently with struct."""
    b = struct.pack(">IIIBHH", seed, sip, dip, 17, sport, ROCE_UDP_DPORT)
    return b + (struct.pack(">I", dqpn)[1:] if dqpn is not None else b"")


def test_doctests():
    assert doctest.testmod(sim.fabric.hashing).failed == 0


def test_crcs_match_zlib_and_binascii_on_random_bytes():
    data = np.random.default_rng(3).integers(0, 256, (200, 20)).astype(np.uint8)
    assert crc32(data).tolist() == [zlib.crc32(bytes(r)) for r in data]
    assert crc16(data).tolist() == [binascii.crc_hqx(bytes(r), 0xFFFF) for r in data]


def test_header_bytes_are_the_documented_layout():
    got = header_bytes(0xA1B2C3D4, 0x0A000101, 0x0A000202, 0xC123, dqpn=np.array([0x123456]))
    assert bytes(got[0]) == packed(0xA1B2C3D4, 0x0A000101, 0x0A000202, 0xC123, 0x123456)


@pytest.mark.parametrize("kind, ref, with_qp", [("crc32", zlib.crc32, True), ("crc32", zlib.crc32, False),
                                                ("crc16", lambda b: binascii.crc_hqx(b, 0xFFFF), True)])
def test_each_switch_hashes_its_seed_with_the_header(kind, ref, with_qp):
    # Given 64 flows and 5 switches: the selector is the CRC of (the switch's seed, the header), low 16 bits,
    # computed here directly with zlib / binascii (the engine computes the header's share once per flow)
    rng = np.random.default_rng(1)
    sip, dip = rng.integers(0, 2**32, 64), rng.integers(0, 2**32, 64)
    sport, dqpn = rng.integers(0xC000, 0x10000, 64), rng.integers(0, 2**24, 64)
    h = SwitchHash(kind, 11, sip, dip, sport, dqpn if with_qp else None)
    nodes = np.array([3, 17, 400, 401, 9999])
    for node, seed in zip(nodes, switch_seeds(11, nodes)):
        got = h.at(np.arange(64), np.full(64, node))
        want = [ref(packed(int(seed), int(a), int(b), int(p), int(q) if with_qp else None)) & 0xFFFF
                for a, b, p, q in zip(sip, dip, sport, dqpn)]
        assert got.tolist() == want


def test_the_switch_seed_changes_the_choices():
    rng = np.random.default_rng(2)
    h = SwitchHash("crc32", 0, rng.integers(0, 2**32, 256), rng.integers(0, 2**32, 256), np.full(256, 0xC000))
    a, b = (h.at(np.arange(256), np.full(256, n)) % np.uint64(18) for n in (100, 101))
    assert (a != b).mean() > 0.5                      # two switches: mostly different picks
    h2 = SwitchHash("crc32", 1, h.flow_term * 0, h.flow_term * 0, np.full(256, 0xC000))   # same header, new seed
    h0 = SwitchHash("crc32", 0, h.flow_term * 0, h.flow_term * 0, np.full(256, 0xC000))
    assert h0.at(np.arange(1), np.array([100]))[0] != h2.at(np.arange(1), np.array([100]))[0]


def crc_loads(seed: int, first_qpn: int, links: int = 18, qps: int = 16) -> np.ndarray:
    """Subflows per uplink when one switch E-ECMP-hashes ``qps`` consecutive destination QPs of one NIC pair with
    CRC32, by the reference zlib.crc32 of the header bytes (low 16 bits mod ``links``)."""
    picks = [(zlib.crc32(packed(seed, 0x0A000101, 0x0A000A01, 0xC000, first_qpn + q)) & 0xFFFF) % links
             for q in range(qps)]
    return np.bincount(picks, minlength=links)


def test_crc32_spread_of_16_consecutive_qps_over_18_uplinks_is_the_functions_own(demo):
    # Given one connection of 16 QPs (consecutive destination QP numbers) from the NIC of GPU 0 to a NIC in
    # another zone, E-ECMP with CRC32: the source leaf has 16 uplinks on demo-256
    t = routing_tables(demo)
    W1 = t.leaf_up.shape[1]
    base = 0x2A40
    ptr, links = route(demo, np.zeros(16, int), np.full(16, 200), np.arange(16), "eecmp", seed=9, hash="crc32",
                       sport=0xC000, dqpn=base + np.arange(16))
    uplink = links[ptr[:-1] + 1]
    col = [int(np.flatnonzero(t.leaf_up[demo.switch_rank[demo.gpu_leaf[0]]] == u)[0]) for u in uplink]
    # Then each pick is the reference CRC32 of the header at that leaf, mod W1
    leaf = int(demo.gpu_leaf[0])
    seed = int(switch_seeds(9, [leaf])[0])
    sip, dip = (int(x) for x in nic_ips(demo, [0, 200]))
    want = [(zlib.crc32(packed(seed, sip, dip, 0xC000, base + q)) & 0xFFFF) % W1 for q in range(16)]
    assert col == want


def test_crc32_load_of_16_consecutive_qps_on_18_uplinks_over_many_seeds():
    # The exact max/mean subflows per uplink over 200 switch seeds (QP block aligned to 16), by the reference CRC,
    # against the engine's vectorized CRC32 on the same headers; and a uniform random hash's for comparison.
    rng = np.random.default_rng(0)
    seeds = rng.integers(0, 2**32, 200)
    ref = np.array([crc_loads(int(s), 0x4B0) for s in seeds])
    mine = []
    for s in seeds:
        data = header_bytes(int(s), 0x0A000101, 0x0A000A01, 0xC000, dqpn=0x4B0 + np.arange(16))
        mine.append(np.bincount((crc32(data) & 0xFFFF) % 18, minlength=18))
    assert np.array_equal(ref, np.array(mine))
    assert (ref.sum(axis=1) == 16).all()
    # CRC is linear: 16 aligned consecutive QP numbers differ in 4 bits, so their hashes form a coset of a
    # 4-dimensional subspace and never repeat: at most 16 distinct values, each once.
    for s in seeds[:20]:
        h = [zlib.crc32(packed(int(s), 0x0A000101, 0x0A000A01, 0xC000, 0x4B0 + q)) & 0xFFFF for q in range(16)]
        assert len(set(h)) == 16
