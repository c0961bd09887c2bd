"""nccl-tests logs as the binaries print them (format read from NVIDIA/nccl-tests src/util.cu: writeDeviceReport,
writeResultHeader, writeBenchmarkLinePreamble/Body, writeResultFooter), parsed and predicted by sim.calibrate."""
import json

import pytest

from sim.calibrate.measurements import read_measurements
from sim.calibrate.nccltests import MAX_LOG_ROWS, LogError, parse_log
from sim.cli import main
from sim.core.errors import ParamError

# all_reduce_perf -b 1M -e 1G -f 2 -g 8 under mpirun on two hosts: 16 ranks (one process per host, 8 GPUs each).
RANKS = "\n".join(f"#  Rank {r:2d} Group  0 Pid {41311 + r // 8:6d} on {'node000' + str(1 + r // 8):>10s} device "
                  f"{r % 8:2d} [0000:{0x18 + 0x10 * (r % 8):02x}:00] NVIDIA H100 80GB HBM3" for r in range(16))
SAMPLE = f"""# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0
#
# Using devices
{RANKS}
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong 
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         
     1048576        262144     float     sum      -1    43.46   24.13   45.24       0    43.24   24.25   45.46       0
     2097152        524288     float     sum      -1    48.92   42.87   80.38       0    48.68   43.08   80.78       0
     4194304       1048576     float     sum      -1    59.85   70.09  131.41       0    59.55   70.44  132.07       0
     8388608       2097152     float     sum      -1    81.69  102.69  192.54       0    81.28  103.20  193.51       0
    16777216       4194304     float     sum      -1   125.38  133.81  250.89       0   124.75  134.48  252.15       0
    33554432       8388608     float     sum      -1   212.76  157.71  295.70       0   211.70  158.50  297.19       0
    67108864      16777216     float     sum      -1   387.53  173.17  324.70       0   385.59  174.04  326.33       0
   134217728      33554432     float     sum      -1   737.05  182.10  341.44       0   733.37  183.02  343.16       0
   268435456      67108864     float     sum      -1  1436.10  186.92  350.47       0  1428.92  187.86  352.24       0
   536870912     134217728     float     sum      -1  2834.20  189.43  355.17       0  2820.03  190.38  356.96       0
  1073741824     268435456     float     sum      -1  5630.41  190.70  357.57       0  5602.25  191.66  359.37       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 248.397 
#
# Collective test concluded: all_reduce_perf
"""

# An older release's layout: no root column, "error" for #wrong, the command line pasted above the output.
OLD = """$ mpirun -np 16 ./build/all_gather_perf -b 8M -e 32M -f 2 -g 1
# nThread 1 nGpus 1 minBytes 8388608 maxBytes 33554432 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
#                                                     out-of-place                       in-place
#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     8388608        131072     float    105.2   79.74   74.76  0e+00    103.9   80.74   75.69  0e+00
    16777216        262144     float    171.5   97.83   91.72  0e+00    170.8   98.23   92.09  0e+00
    33554432        524288     float    306.4  109.51  102.67  0e+00    305.2  109.94  103.07  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 90
"""


def test_sample_parses_to_its_rows():
    log = parse_log(SAMPLE)
    assert log.collective == "allreduce"
    assert (log.n_threads, log.n_gpus) == (1, 8)
    assert len(log.ranks) == 16 and log.ranks[0] == ("node0001", 0) and log.ranks[15] == ("node0002", 7)
    assert [r.size for r in log.rows] == [1 << s for s in range(20, 31)]
    assert [r.count for r in log.rows] == [r.size // 4 for r in log.rows]
    first, last = log.rows[0], log.rows[-1]
    assert (first.type, first.redop, first.root) == ("float", "sum", -1)
    assert first.time["out-of-place"] == pytest.approx(43.46e-6) and first.time["in-place"] == pytest.approx(43.24e-6)
    assert last.busbw["out-of-place"] == pytest.approx(357.57e9) and last.algbw["in-place"] == pytest.approx(191.66e9)
    # the footer's average is the mean busbw over both halves of every row, as nccl-tests computes it (common.cu)
    assert sum(sum(r.busbw.values()) for r in log.rows) / (2 * len(log.rows)) / 1e9 == pytest.approx(248.397,
                                                                                                      abs=1e-3)


def test_older_layout_and_command_line():
    log = parse_log(OLD)
    assert log.collective == "allgather" and log.ranks == []
    assert [r.size for r in log.rows] == [8 << 20, 16 << 20, 32 << 20]
    assert log.rows[1].root is None and log.rows[1].time["out-of-place"] == pytest.approx(171.5e-6)
    assert log.rows[2].busbw["in-place"] == pytest.approx(103.07e9)


@pytest.mark.parametrize("text, words", [
    ("", "empty"),
    ("# Collective test starting: all_reduce_perf\n     1048576  262144  float  sum  -1  1.0  1.0  1.0  0  1.0  1.0  "
     "1.0  0\n", "before the column header"),
    (SAMPLE.replace("   -1    43.46", "   -1"), "fields where the column header has"),
    (SAMPLE.replace("43.46", "0.00", 1), "must be above 0"),
    (SAMPLE.replace("43.46", "fast", 1), "is not a number"),
    (SAMPLE.replace("all_reduce_perf", "sendrecv_perf"), "line 2: sendrecv_perf .* not modelled"),
    (SAMPLE.replace("all_reduce_perf", "gather_perf"), "line 2: gather_perf is not a collective the twin models"),
    ("\n".join(SAMPLE.splitlines()[:25]) + "\n", "no data rows"),
])
def test_bad_logs_are_refused_naming_the_line(text, words):
    with pytest.raises(LogError, match=words):
        parse_log(text)


def test_too_many_rows():
    head, row = SAMPLE.split("     1048576")[0], SAMPLE.splitlines()[29]
    with pytest.raises(LogError, match=f"more than {MAX_LOG_ROWS}"):
        parse_log(head + "\n".join([row] * (MAX_LOG_ROWS + 1)))


def test_entry_from_the_log():
    [e] = read_measurements(json.dumps({"entry": [{"kind": "nccl-tests", "log": SAMPLE}]}))
    assert e.values["collective"] == "allreduce" and e.values["gpus"] == 16 and e.values["type"] == "float"
    assert [o.size for o in e.observations] == [1 << s for s in range(20, 31)]
    assert e.observations[0].measured == pytest.approx(43.46e-6)
    with pytest.raises(ParamError) as err:
        read_measurements(json.dumps({"entry": [{"kind": "nccl-tests", "log": SAMPLE,
                                                 "params": {"collective": "allgather"}}]}))
    assert "entry[0].params.collective" in err.value.errors


def test_prediction_on_the_given_hosts(tmp_path, capsys):
    """Each row becomes a prediction of the same collective and size on the hosts the log ran on."""
    hosts = "demo-256.z00.r000.h0 slots=8\ndemo-256.z00.r001.h0 slots=8\n"
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"entry": [{"kind": "nccl-tests", "name": "ar16", "log": SAMPLE, "hosts": hosts}]}))
    assert main(["calibrate", "--preset", "demo-256", "--measurements", str(f), "--fit", "base_rtt_us", "--json",
                 "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    rows = d["entries"]
    assert len(rows) == 11 and {r["quantity"] for r in rows} == {"time"}
    assert all(r["before"]["predicted"] > 0 for r in rows)
    # the latency-bound rows inform the RTT: the fit lowers the small sizes' error
    small = [abs(r["after"]["error"]) <= abs(r["before"]["error"]) + 1e-9 for r in rows[:3]]
    assert all(small) and "base_rtt_us" in d["parameters"]
    # a list of another length than the log's Rank lines is refused, naming the entry and field
    f.write_text(json.dumps({"entry": [{"kind": "nccl-tests", "log": SAMPLE, "hosts": hosts.splitlines()[0]}]}))
    assert main(["calibrate", "--preset", "demo-256", "--measurements", str(f), "-q"]) == 2
    assert "entry[0].hosts" in capsys.readouterr().err
