"""PF405: sequence parallelism without tensor parallelism."""

from preflight.engine import Example, Rule

_PRETRAIN = ("from megatron.training import pretrain\n\n"
             "if __name__ == \"__main__\":\n"
             "    pretrain(train_valid_test_datasets_provider, model_provider, "
             "ModelType.encoder_or_decoder, forward_step)\n")


def _launch(parallel: str) -> str:
    return ("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
            f"    {parallel} \\\n"
            "    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 \\\n"
            "    --micro-batch-size 2 --global-batch-size 96 --bf16 --vocab-size 32000\n")


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

    INVALID = [Example(files={"pretrain_gpt.py": _PRETRAIN,
                              "train.sh": _launch("--tensor-model-parallel-size 1 --sequence-parallel")},
                       expect=[("PF405", "train.sh", 2)])]
    VALID = [Example(files={"pretrain_gpt.py": _PRETRAIN,
                            "train.sh": _launch("--tensor-model-parallel-size 2 --sequence-parallel")})]

    def check(self, ctx):
        sp = ctx.plan.facts.get("sp")
        if sp is None or not sp.known or sp.value is not True or ctx.v("tp", 1) != 1:
            return
        tpf = ctx.plan.facts.get("tp")
        yield self.diagnostic(
            "sequence parallelism is on but tensor parallel size is 1: it does nothing",
            sp.source, related=[tpf.source] if tpf is not None and tpf.source else [],
            fix="drop --sequence-parallel or raise --tensor-model-parallel-size")
