"""Raw nccl-tests logs as the binaries print them (NVIDIA/nccl-tests src/util.cu: writeDeviceReport,
writeResultHeader, writeBenchmarkLinePreamble/Body, writeResultFooter), for the parser's and the calibration's
tests: each binary in the current layout (redop and root columns, ``#wrong``) and in older ones (no root column;
no redop either; ``error`` for ``#wrong``)."""

# binary -> (redop it prints, busbw factor of n ranks: doc/PERFORMANCE.md)
BINARIES = {
    "all_reduce_perf": ("sum", lambda n: 2 * (n - 1) / n),
    "all_gather_perf": ("none", lambda n: (n - 1) / n),
    "reduce_scatter_perf": ("sum", lambda n: (n - 1) / n),
    "alltoall_perf": ("none", lambda n: (n - 1) / n),
    "sendrecv_perf": ("sum", lambda n: 1.0),
}
H100 = "NVIDIA H100 80GB HBM3"


def rank_lines(ranks: int, per_host: int = 8, gpu: str = H100, host: str = "node{:04d}") -> list[str]:
    return [f"#  Rank {r:2d} Group  0 Pid {41311 + r // per_host:6d} on {host.format(1 + r // per_host):>10s} device "
            f"{r % per_host:2d} [0000:{0x18 + 0x10 * (r % per_host):02x}:00] {gpu}" for r in range(ranks)]


def log(binary: str = "all_reduce_perf", sizes=(1 << 20, 8 << 20, 64 << 20), ranks: int = 16, layout: str = "new",
        gpu: str = H100, dtype: str = "float", footer: bool = True, per_host: int = 8, rank_section: bool = True,
        info: bool = False) -> str:
    """One log: ``layout`` "new" (size count type redop root, #wrong), "noroot" (size count type redop, error),
    "bare" (size count type, error: the oldest)."""
    redop, factor = BINARIES[binary]
    width = {"float": 4, "half": 2, "bfloat16": 2, "double": 8, "int8": 1}[dtype]
    wrong = "#wrong" if layout == "new" else "error"
    pre = {"new": "   redop    root", "noroot": "   redop", "bare": ""}[layout]
    out = ["# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703" if layout == "new" else None,
           f"# Collective test starting: {binary}" if layout == "new" else
           f"$ mpirun -np {ranks} ./build/{binary} -g 1",
           f"# nThread 1 nGpus {per_host if layout == 'new' else 1} minBytes {sizes[0]} maxBytes {sizes[-1]} "
           f"step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
           "#"]
    if rank_section:
        out += ["# Using devices", *rank_lines(ranks, per_host, gpu), "#"]
    out += ["#                                                              out-of-place                     in-place",
            f"#       size         count      type{pre}     time   algbw   busbw {wrong}     time   algbw   busbw "
            f"{wrong}",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  "
            "(GB/s)"]
    count_of = (lambda s: s // width // ranks) if binary in ("all_gather_perf", "alltoall_perf") else (
        lambda s: s // width)
    for k, size in enumerate(sizes):
        t = 40.0 + size / 150e3               # us: a latency and a bandwidth term
        alg = size / (t * 1e3)
        bus = alg * factor(ranks)
        cols = {"new": f" {redop:>7s} {-1 if binary != 'sendrecv_perf' else -1:>7d}", "noroot": f" {redop:>7s}",
                "bare": ""}[layout]
        w = "0" if layout == "new" else "0e+00"
        out.append(f"{size:12d} {count_of(size):13d} {dtype:>9s}{cols} {t:8.2f} {alg:7.2f} {bus:7.2f} {w:>6s} "
                   f"{t * 0.99:8.2f} {alg / 0.99:7.2f} {bus / 0.99:7.2f} {w:>6s}")
        if info and k == 0:
            out.append("node0001:41311:41320 [0] NCCL INFO Channel 00/0 : 0[18000] -> 1[28000] via P2P/IPC")
    if footer:
        out += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 123.45", "#"]
        if layout == "new":
            out.append(f"# Collective test concluded: {binary}")
    return "\n".join(x for x in out if x is not None) + "\n"
