"""What a dry run measured: one ledger per rank, plus how the run ended.

Plain pydantic, no torch: the parent process (and `preflight check --dry-run`) reads the
JSON the instrumented child wrote without importing torch.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field

#: Measured ledger items, in report order. `autocast_copies` is its own item: low-precision
#: copies of fp32 weights that autocast keeps alive for backward (counted in activations by
#: the estimator's formulas, measured separately here).
MEASURED_KEYS = ("params", "grads", "optimizer", "master", "activations", "loss_activations",
                 "autocast_copies")

#: Phases at which memory is recorded (docs/ledger.md, "Measuring").
PHASES = ("model_init", "optimizer_init", "forward", "backward", "step")


class PhaseMemory(BaseModel):
    """Memory at the end of one phase. CUDA: the allocator's counters (bytes), peak reset
    at the start of each phase, and what the process holds on the device (`process`, as
    nvidia-smi shows it: context, libraries' workspaces, NCCL buffers, reserved segments;
    see `RankLedger.process_source`). CPU / fake: only `rss` (the process resident set)."""

    phase: str
    allocated: Optional[int] = None
    peak: Optional[int] = None
    reserved: Optional[int] = None
    rss: Optional[int] = None
    process: Optional[int] = None       # the process's device memory at the phase's end
    process_peak: Optional[int] = None  # the largest reading during the phase (sampled)
    device_used: Optional[int] = None   # torch.cuda.mem_get_info: total − free, device-wide


class RankLedger(BaseModel):
    """One process's measurement. Bytes by unique storage (FSDP2: the local shard)."""

    rank: int = 0
    world_size: int = 1
    device: str = "cpu"                 # cuda | cpu | fake
    status: str = "ok"                  # ok | no_step | error | oom | timeout
    phase: Optional[str] = None         # where it ended: load | forward | backward | step
    error: Optional[str] = None         # one line: exception type and message
    #: where it failed, innermost last: "train.py:42 in main: loss = model(x)" (the
    #: script's own frames; preflight's and the interpreter's are left out)
    traceback: list[str] = Field(default_factory=list)
    params: int = 0
    trainable_params: int = 0           # element count of params that require grad
    param_count: int = 0                # element count of all params (local shard)
    grads: int = 0
    optimizer: int = 0
    master: int = 0
    activations: int = 0                # largest micro-step (grad-enabled root forward)
    loss_activations: int = 0           # saved after the model's forward, before backward
                                        # (the loss: log-softmax over the logits, …)
    autocast_copies: int = 0
    activations_per_forward: list[int] = Field(default_factory=list)
    forwards: int = 0                   # grad-enabled root forwards before the step
    optimizers: list[str] = Field(default_factory=list)
    memory: list[PhaseMemory] = Field(default_factory=list)
    max_rss: Optional[int] = None       # bytes, resource.getrusage(RUSAGE_SELF).ru_maxrss
    #: the process's device memory, largest over the phases (None: see process_unavailable)
    process_peak: Optional[int] = None
    #: how it was read: nvml_process | nvml_device_delta | torch_device_delta
    #: (preflight.dryrun.devmem.SOURCES), comma-separated if the phases differ
    process_source: Optional[str] = None
    process_unavailable: Optional[str] = None   # why it is None ("no CUDA device", …)
    #: device-wide used bytes before the process initialised CUDA (the *_delta sources)
    process_baseline: Optional[int] = None
    wall_s: Optional[float] = None      # seconds from start of the script to the end
    notes: list[str] = Field(default_factory=list)

    def bytes_of(self, key: str) -> int:
        return int(getattr(self, key))

    @property
    def peak(self) -> Optional[int]:
        vals = [m.peak for m in self.memory if m.peak is not None]
        return max(vals) if vals else None


class DryrunResult(BaseModel):
    """The whole run: the ranks' ledgers and how the launch ended."""

    script: str
    args: list[str] = Field(default_factory=list)
    device: str = "cpu"
    nproc_per_node: int = 1
    estimate: bool = False              # True in fake mode: shapes are real, memory is not
    status: str = "ok"                  # ok | no_step | error | oom | timeout | launch_error | killed
    returncode: Optional[int] = None
    message: str = ""
    ranks: list[RankLedger] = Field(default_factory=list)
    stderr_tail: str = ""
    wall_s: Optional[float] = None

    @property
    def oom_case(self) -> Optional[str]:
        """An OOM reported as the diagnosis case it confirms (docs/ledger.md): at load or in
        the optimizer step → A (model states); in forward or backward → B (activations)."""
        for r in self.ranks:
            if r.status == "oom":
                return "B" if r.phase in ("forward", "backward") else "A"
        return None

    def to_json(self) -> dict:
        out = self.model_dump()
        out["oom_case"] = self.oom_case
        for r, d in zip(self.ranks, out["ranks"]):
            d["peak"] = r.peak
        return out
