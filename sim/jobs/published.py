"""What Meta measured on its Llama 3 405B pre-training runs (the Llama 3 paper's Table 4 [S3]), beside a simulated
job (:mod:`sim.core.published`): the nearest published case (same model first, then the nearest GPU count and
sequence length), what differs between the two cases, and the mechanisms the step model still leaves out. Nothing
here feeds the model; no constant is set from these figures.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from sim.core.published import Reference, beside

# What the step model leaves out or simplifies (docs/jobs.md "Where the model disagrees"): every comparison says it.
LEFT_OUT = ("not modelled: the HBM bandwidth that TP's copy-engine all-gathers take from the GEMMs they overlap "
            "(their SMs are counted), host-side gaps beyond each kernel's launch (the GEMM curve, attention's kernel, "
            "memory-bound kernels, launches and the optimizer step are modelled, their fitted factors at their "
            "priors until the corpus fit), data loading, stragglers and the 1-2 % daily thermal swing [S3]; all dimensions' flows contend for the "
            "whole step (a worst case for the bursty TP and PP); FSDP prefetches one layer ahead only and shards over "
            "DP alone (the CP ranks' gradient reduction is not counted); Meta ran its "
            "own interleaved schedule (virtual stages not published), the simulated job runs the schedule it names")


@dataclass(frozen=True)
class Run:
    """One published run: its layout and its measured TFLOPs per GPU and MFU (BF16)."""

    model: str
    gpus: int
    tp: int
    cp: int
    pp: int
    dp: int
    seq: int
    batch_tokens: int
    tflops: float
    mfu: float

    @property
    def case(self) -> str:
        return (f"Llama 3 405B pre-training, {self.gpus:,} H100 GPUs, TP {self.tp} x CP {self.cp} x PP {self.pp} x "
                f"DP {self.dp}, seq {self.seq:,}, {self.batch_tokens // (1 << 20)}M tokens per batch")


# Llama 3 paper [S3], Table 4 (from the paper; the GPU counts, layouts, batch and TFLOPs/GPU agree with Meta's SC'24
# slide as transcribed publicly; the sequence lengths and the MFU column are the paper's, not re-verified here).
RUNS = (
    Run("llama3-405b", 8192, 8, 1, 16, 64, 8192, 16 << 20, 430.0, 0.43),
    Run("llama3-405b", 16384, 8, 1, 16, 128, 8192, 16 << 20, 400.0, 0.41),
    Run("llama3-405b", 16384, 8, 16, 16, 8, 131072, 16 << 20, 380.0, 0.38),
)
FIELDS = ("gpus", "tp", "cp", "pp", "dp", "seq", "batch_tokens")


def nearest(p: dict) -> tuple[Run, bool, str]:
    """The published run nearest the job ``p`` (same model first, then the nearest GPUs and sequence length, on a
    log scale), whether it is the same case, and what differs in words."""
    def distance(r: Run):
        return (r.model != p["model"], abs(math.log2(p["gpus"] / r.gpus)) + abs(math.log2(p["seq"] / r.seq))
                + abs(math.log2(p["cp"] / r.cp)))

    run = min(RUNS, key=distance)
    differs = [f"model {p['model']}, not {run.model}"] if p["model"] != run.model else []
    differs += [f"{f} {p[f]:,} (published {getattr(run, f):,})" for f in FIELDS if p[f] != getattr(run, f)]
    if p.get("precision", "bf16") != "bf16":
        differs.append(f"precision {p['precision']} (published BF16)")
    return run, not differs, "; ".join(differs)


def published_beside(p: dict, tflops: float, mfu: float) -> list[dict]:
    """The nearest published run's TFLOPs/GPU and MFU beside the job's simulated ones (:func:`beside`)."""
    run, same, differs = nearest(p)
    key = f"llama3-table4-{run.gpus}-cp{run.cp}"
    refs = (Reference(f"{key}-tflops", "TFLOPs per GPU (BF16, model FLOPs)", run.tflops, run.tflops, "TFLOP/s",
                      "S3", run.case, LEFT_OUT), tflops), \
        (Reference(f"{key}-mfu", "MFU (model FLOPs over the dense BF16 peak)", run.mfu, run.mfu, "fraction", "S3",
                   run.case, LEFT_OUT), mfu)
    return [beside(ref, value, same_case=same, differs=differs) for ref, value in refs]
