"""PF405: sequence parallelism without tensor parallelism."""

from preflight.engine import Example, Rule
from preflight.rules._common import megatron_job



class SequenceParallelWithoutTp(Rule):
    """
    ## What it does
    Reports sequence parallelism switched on while the tensor-parallel size is 1.

    ## Why is this bad
    Megatron's sequence parallelism splits the LayerNorm and dropout activations across
    the tensor-parallel group of t GPUs, to 1/t each; with t = 1 it splits nothing and
    saves 0 bytes, so a job relying on it for its activations will not fit.

    ## Example
    ```bash
    pretrain_gpt.py --tensor-model-parallel-size 1 --sequence-parallel
    ```

    ## Use instead
    Drop `--sequence-parallel`, or raise `--tensor-model-parallel-size`.
    """

    code = "PF405"
    name = "sequence-parallel-without-tp"
    summary = "Sequence parallelism on while the tensor-parallel size is 1"
    severity = "warning"

    INVALID = [Example(files=megatron_job("--tensor-model-parallel-size 1 --sequence-parallel"),
                       expect=[("PF405", "train.sh", 3)])]
    VALID = [Example(files=megatron_job("--tensor-model-parallel-size 2 --sequence-parallel"))]

    def check(self, ctx):
        sp = ctx.plan.facts.get("sp")
        if sp is None or not sp.known or sp.value is not True or ctx.v("tp", 1) != 1:
            return
        tpf = ctx.plan.facts.get("tp")
        yield self.diagnostic(
            "sequence parallelism is on but tensor parallel size is 1: it does nothing",
            sp.source, related=[tpf.source] if tpf is not None and tpf.source else [],
            fix="drop --sequence-parallel or raise --tensor-model-parallel-size")
