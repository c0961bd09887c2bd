"""The training jobs' live sections: which job runs each GPU (``gpu_job``: the jobs holding GPUs,
:func:`twin.runs.job_actions.holding`) and one row per job (``job_stats``), sent by the ``job`` kind as its job is
placed and simulated (:func:`twin.runs.job_actions.publish_jobs`) and when a job is released (the cluster's stream,
:func:`twin.runs.job_actions.publish_released`)."""
from __future__ import annotations

import numpy as np

from twin.live.sections import Section, register

# A training job's row in job_stats (float32 each), and the codes of its ``phase``: where the job is in its life as
# the twin simulates it (twin.runs.models.Job states, with ``placing`` and ``simulating`` before ``running``: placed,
# its step simulated, holding its GPUs until released; ``finished``: released, or a what-if once simulated).
JOB_FIELDS = ("job", "phase", "step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "gpus")
JOB_QUEUED, JOB_PLACING, JOB_SIMULATING, JOB_FINISHED, JOB_FAILED, JOB_RUNNING = 0, 1, 2, 3, 4, 5
JOB_PHASES = {JOB_QUEUED: "queued", JOB_PLACING: "placing", JOB_SIMULATING: "simulating", JOB_FINISHED: "finished",
              JOB_FAILED: "failed", JOB_RUNNING: "running"}

GPU_JOB = register(Section(
    8, "gpu_job", "uint16", "array", per="gpu",
    rack_figure=lambda job, constants: (job > 0, np.ones(job.shape, bool)),    # share of the rack's GPUs in a job
    doc="per GPU (by GPU.index): 0 no job, k the job of row k of job_stats"))
JOB_STATS = register(Section(
    9, "job_stats", "float32", "rows", fields=JOB_FIELDS, codes={"phase": JOB_PHASES}, ints=("job", "gpus"),
    doc="one row per job: its id, phase, step time (s), tokens/s, TFLOPs per GPU, MFU 0..1, GPU count; NaN where "
        "not known yet"))
