"""Switch hash functions for ECMP: what header bytes a switch hashes, and how it turns them into a next hop.

Model
-----
A RoCEv2 packet's ECMP key is its 5-tuple, as a switch ASIC's hash field list selects it: source IP, destination
IP, IP protocol (17, UDP), UDP source port and UDP destination port (4791, RoCEv2's registered port; InfiniBand
Architecture Specification, Annex A17, docs/sources.md [S14]). Enhanced ECMP adds the destination queue pair
number of the InfiniBand base transport header (24 bits), which Meta's switches hash through a user-defined field
(Gangidi et al., SIGCOMM 2024, docs/sources.md [S2]). Each switch has its own 32-bit seed (SAI's
``SAI_SWITCH_ATTR_ECMP_DEFAULT_HASH_SEED``; docs/sources.md [S13]); here it is drawn from the run's seed and the
switch's node id, so two switches of one tier choose independently but deterministically.

The bytes hashed, in this order (:func:`header_bytes`): seed (4, big-endian), source IP (4), destination IP (4),
protocol (1), UDP source port (2), UDP destination port (2) and, for E-ECMP, the destination QP number (3). This
follows the SAI reference pipeline of SONiC PINS (``sai_p4/instantiations/google/hashing.p4``: CRC32 over the seed,
the addresses and the L4 ports, a 16-bit result; [S13]); the exact bit layout of a vendor's hash engine is not
public, so the order is our documented choice. Hash functions (:data:`HASHES`):

- ``uniform``: splitmix64 over the same fields, mixed with the switch id: an ideal random hash (the engine's
  reference; the figure's "uniform" case).
- ``crc32``: CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, initial value and final xor 0xFFFFFFFF, as zlib)
  of the bytes; the switch keeps its low 16 bits (SAI ``SAI_HASH_ALGORITHM_CRC_32LO``, the PINS pipeline's 16-bit
  selector).
- ``crc16``: CRC-16-CCITT (polynomial 0x1021, not reflected, initial value 0xFFFF; SAI
  ``SAI_HASH_ALGORITHM_CRC_CCITT``) of the same bytes.

The pick among ``n`` valid next hops is ``h mod n`` (an action selector's member choice; [S13]). CRCs are affine over
GF(2): ``crc(a xor b) = crc(a) xor crc(b) xor crc(0)`` for equal lengths, so a switch's seed changes every flow's
hash by the same xor mask; :class:`SwitchHash` uses this to compute each flow's fields once (one table lookup per
header byte over the whole flow array) and each switch's seed term once.

IP addresses (an assumption, documented): the NIC on port ``p`` of leaf ``l`` (rank in the leaf tier) has
``10.(l >> 8).(l & 255).(p + 1)``: one /24 per rack switch (:func:`nic_ips`).
"""
from __future__ import annotations

import numpy as np

HASHES = ("uniform", "crc32", "crc16")
ROCE_UDP_DPORT = 4791                 # RoCEv2's UDP destination port (IBTA Annex A17, docs/sources.md [S14])
IP_PROTO_UDP = 17
SELECTOR_BITS = 16                    # the switch's ECMP selector width (SAI CRC_32LO; PINS hashing.p4 [S13])

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def splitmix64(x) -> np.ndarray:
    """The splitmix64 finalizer (Steele, Lea & Flood 2014) over a uint64 array: a bijective, well-mixed hash.

    >>> int(splitmix64(np.array([0], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF
    True
    """
    return _splitmix64_into(np.array(x, dtype=np.uint64))     # a copy, mixed in place


def _splitmix64_into(z: np.ndarray) -> np.ndarray:
    """:func:`splitmix64` of the uint64 array ``z``, written over it (one scratch array): for a caller whose ``z``
    is already a fresh temporary, one copy of the flow array fewer."""
    z += _GOLDEN
    t = np.empty_like(z)
    for shift, mult in ((_S30, _MIX1), (_S27, _MIX2)):
        z ^= np.right_shift(z, shift, out=t)
        z *= mult
    z ^= np.right_shift(z, _S31, out=t)
    return z


def combine(h: np.ndarray, v) -> np.ndarray:
    """Fold one more field ``v`` into the running splitmix64 key ``h``."""
    z = np.bitwise_xor(h, np.asarray(v).astype(np.uint64, copy=False), dtype=np.uint64)   # fresh: mixed in place
    return _splitmix64_into(z) if isinstance(z, np.ndarray) and z.ndim else splitmix64(z)


# --------------------------------------------------------------------------------------------------- CRC tables
def _crc32_table() -> np.ndarray:
    t = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        t = np.where(t & 1, (t >> np.uint32(1)) ^ np.uint32(0xEDB88320), t >> np.uint32(1)).astype(np.uint32)
    return t


def _crc16_table() -> np.ndarray:
    t = np.arange(256, dtype=np.uint32) << np.uint32(8)
    for _ in range(8):
        t = np.where(t & 0x8000, (t << np.uint32(1)) ^ np.uint32(0x1021), t << np.uint32(1)) & np.uint32(0xFFFF)
    return t.astype(np.uint32)


CRC32_TABLE = _crc32_table()
CRC16_TABLE = _crc16_table()


def crc32(data: np.ndarray) -> np.ndarray:
    """CRC-32 (zlib's) of each row of ``data`` ((F, L) uint8): one 256-entry table lookup per byte column.

    >>> hex(int(crc32(np.frombuffer(b"123456789", np.uint8)[None])[0]))
    '0xcbf43926'
    """
    data = np.asarray(data, dtype=np.uint8)
    c = np.full(data.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for j in range(data.shape[1]):
        c = CRC32_TABLE[(c ^ data[:, j]) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
    return c ^ np.uint32(0xFFFFFFFF)


def crc16(data: np.ndarray) -> np.ndarray:
    """CRC-16-CCITT (polynomial 0x1021, initial 0xFFFF, no reflection, no final xor) of each row of ``data``.

    >>> hex(int(crc16(np.frombuffer(b"123456789", np.uint8)[None])[0]))
    '0x29b1'
    """
    data = np.asarray(data, dtype=np.uint8)
    c = np.full(data.shape[0], 0xFFFF, dtype=np.uint32)
    for j in range(data.shape[1]):
        idx = ((c >> np.uint32(8)) ^ data[:, j]) & np.uint32(0xFF)
        c = ((c << np.uint32(8)) & np.uint32(0xFFFF)) ^ CRC16_TABLE[idx]
    return c


CRCS = {"crc32": crc32, "crc16": crc16}


def _be(values, nbytes: int) -> np.ndarray:
    """(F, nbytes) big-endian bytes of non-negative integers."""
    v = np.asarray(values, dtype=np.uint64)
    shifts = np.arange(nbytes - 1, -1, -1, dtype=np.uint64) * np.uint64(8)
    return ((v[:, None] >> shifts[None, :]) & np.uint64(0xFF)).astype(np.uint8)


def header_bytes(seed, src_ip, dst_ip, sport, dport=ROCE_UDP_DPORT, dqpn=None) -> np.ndarray:
    """The (F, 17) or, with ``dqpn``, (F, 20) bytes a switch hashes (module docstring: seed, source IP, destination
    IP, protocol, UDP source port, UDP destination port, destination QP). Scalars broadcast over the flows."""
    n = max(np.size(x) for x in (seed, src_ip, dst_ip, sport, dport, dqpn) if x is not None)
    col = lambda x: np.broadcast_to(np.asarray(x, dtype=np.uint64), (n,))  # noqa: E731
    parts = [_be(col(seed), 4), _be(col(src_ip), 4), _be(col(dst_ip), 4), _be(col(IP_PROTO_UDP), 1),
             _be(col(sport), 2), _be(col(dport), 2)]
    if dqpn is not None:
        parts.append(_be(col(dqpn) & np.uint64(0xFFFFFF), 3))
    return np.concatenate(parts, axis=1)


def nic_ips(topo, gpus) -> np.ndarray:
    """IPv4 address (as an integer) of each GPU's backend NIC: ``10.(l >> 8).(l & 255).(p + 1)`` for leaf rank ``l``
    and leaf port ``p`` (module docstring). The table of every GPU's address is built once per topology."""
    table = topo.cache.get("nic_ips") if hasattr(topo, "cache") else None
    if table is None:
        leaf = np.asarray(topo.switch_rank)[np.asarray(topo.gpu_leaf)].astype(np.uint64)
        port = np.asarray(topo.gpu_leaf_port).astype(np.uint64)
        host_byte = (port + np.uint64(1)) & np.uint64(0xFF)
        table = np.uint64(10 << 24) | ((leaf & np.uint64(0xFFFF)) << np.uint64(8)) | host_byte
        if hasattr(topo, "cache"):
            topo.cache["nic_ips"] = table
    return table[np.asarray(gpus, dtype=np.int64)]


def switch_seeds(seed: int, nodes) -> np.ndarray:
    """The 32-bit ECMP hash seed of each switch (node id) for a run seed: drawn from both, so fixed per switch."""
    s = splitmix64(np.asarray(nodes, dtype=np.uint64) ^ splitmix64(np.array([seed], dtype=np.uint64)))
    return s & np.uint64(0xFFFFFFFF)


class SwitchHash:
    """The ECMP hash of a set of flows at any switch: ``at(rows, nodes)`` gives, for flows ``rows`` at switches
    ``nodes`` (node ids), the selector whose ``mod n`` picks the next hop.

    ``fields``: dict of per-flow arrays ``src_ip``, ``dst_ip``, ``sport`` and, for E-ECMP, ``dqpn`` (``None`` for
    plain ECMP). ``kind``: one of :data:`HASHES`. ``repeat=k``: ``src_ip`` and ``dst_ip`` are given once per ``k``
    consecutive flows (a connection's QPs), so the uniform hash folds them in once per connection.
    """

    def __init__(self, kind: str, seed: int, src_ip, dst_ip, sport, dqpn=None, repeat: int = 1,
                 n_nodes: int | None = None):
        if kind not in HASHES:
            raise ValueError(f"hash {kind!r} is not one of {', '.join(HASHES)}")
        self.kind, self.seed, self.with_qp = kind, int(seed), dqpn is not None
        # ``n_nodes``: node ids lie below it, so the uniform hash's per-switch term (splitmix64 of the node id) is
        # one table of ``n_nodes`` entries looked up per flow, not a splitmix64 over every flow at every hop.
        self._node_mix = None if n_nodes is None or kind != "uniform" else \
            splitmix64(np.arange(int(n_nodes), dtype=np.uint64))
        if kind == "uniform":
            key = combine(splitmix64(np.array([self.seed], dtype=np.uint64)), src_ip)     # the seed's once
            key = combine(key, dst_ip)
            key = np.repeat(key, repeat) if repeat > 1 else key   # a fresh array: the per-flow fields fold in place
            if key.ndim:
                for v in (sport,) if dqpn is None else (sport, dqpn):
                    key ^= np.asarray(v).astype(np.uint64, copy=False)
                    _splitmix64_into(key)
            else:
                key = combine(key, sport)
                key = combine(key, dqpn) if dqpn is not None else key
            self.key = key
        else:
            if repeat > 1:
                src_ip, dst_ip = np.repeat(src_ip, repeat), np.repeat(dst_ip, repeat)
            self.crc = CRCS[kind]
            self.flow_term = self.crc(header_bytes(0, src_ip, dst_ip, sport, dqpn=dqpn))   # seed bytes zero
            self.width = 20 if dqpn is not None else 17
            self.zero = self.crc(np.zeros((1, self.width), dtype=np.uint8))[0]
            self._seed_term: dict[int, int] = {}

    def _seed_terms(self, nodes: np.ndarray) -> np.ndarray:
        """crc(seed of the switch, then zeros) for each node: the switch's share of the affine CRC."""
        uniq, inv = np.unique(nodes, return_inverse=True)
        seeds = switch_seeds(self.seed, uniq)
        data = np.zeros((uniq.size, self.width), dtype=np.uint8)
        data[:, :4] = _be(seeds, 4)
        return self.crc(data)[inv]

    def at(self, rows: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """uint64 selector of flows ``rows`` at switches ``nodes`` (same length)."""
        if self.kind == "uniform":
            nodes = np.asarray(nodes)
            mix = splitmix64(nodes.astype(np.uint64)) if self._node_mix is None else self._node_mix[nodes]
            z = self.key[rows].copy() if isinstance(rows, slice) else self.key.take(rows)   # mixed in place
            z ^= mix
            return _splitmix64_into(z)
        h = self._seed_terms(np.asarray(nodes)) ^ self.flow_term[rows] ^ self.zero
        return (h & np.uint32((1 << SELECTOR_BITS) - 1)).astype(np.uint64)
