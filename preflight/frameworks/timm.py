"""timm (pytorch-image-models): its `train.py`, run as `./distributed_train.sh N [flags]`
(torchrun with N processes per node), `torchrun --nproc_per_node=N train.py [flags]` or
`python train.py [flags]`, and `--config args.yaml`, whose keys set the parser's defaults
(the flags given on the line still win).

Flags: `--model` (resnet50 by default), `-b / --batch-size` (128 per process),
`--grad-accum-steps` (1), `--amp` with `--amp-dtype` (float16 by default) — autocast over
fp32 weights; `--model-dtype` trains the weights in that dtype —, `--opt` (SGD with
Nesterov momentum 0.9 by default), `--grad-checkpointing`. An image classifier has no
token sequence: the input size (`--img-size`, `--input-size`) is not a sequence length.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from preflight.facts import spellings
from preflight.frameworks import ConfigOut, Example, Framework, flag_int, flag_values, when_true
from preflight.plan import Fact, Invocation, Origin


def _opt(s: Optional[str]) -> Optional[str]:
    """timm's optimizer names (`sgd`, `momentum`, `adamw`, `lamb`, `fusedlamb`, `lion`…)."""
    if not s:
        return None
    n = s.lower().split("_", 1)[-1] if s.lower().startswith(("fused", "lookahead_")) else s.lower()
    n = n.removeprefix("fused")
    if n in ("sgd", "nesterov", "momentum"):
        return "sgd_momentum"
    return spellings.optimizer_name(n) or "other"


def _dtype(s: Optional[str]) -> Optional[str]:
    d = spellings.dtype(s) if s else None
    return d if d in ("bf16", "fp16", "fp32") else None


FLAGS = {
    "model": ("model", lambda s: s),
    "batch_size": ("micro_batch", flag_int),
    "grad_accum_steps": ("grad_accum", flag_int),
    "grad_checkpointing": ("activation_checkpointing", when_true("full")),
    "opt": ("optimizer", _opt),
    "model_dtype": ("param_dtype", _dtype),
}
#: flags only timm's train.py defines (two of them, with `--model`, mark its line)
_MARKERS = ("opt", "sched", "amp", "amp_dtype", "grad_accum_steps", "drop_path", "reprob", "aa",
            "mixup", "cutmix", "warmup_epochs", "model_ema", "smoothing", "remode", "opt_eps",
            "channels_last", "img_size", "input_size", "num_classes", "dist_bn", "sync_bn")



def _amp(amp: Any, dtype: Any) -> Optional[str]:
    if amp is not True and str(amp).lower() not in ("true", "none") or amp is None:
        return None
    return spellings.autocast_dtype(str(dtype or "float16")) or "fp16"


def _timm_launcher(path: str) -> bool:
    """Is a `distributed_train.sh` timm's (torchrun over `train.py` with the first argument as
    the process count)? One that the checkout holds is read; an absent one is timm's."""
    if not os.path.isfile(path):
        return True
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(8192)
    except OSError:
        return False
    return "train.py" in text and ("torchrun" in text or "torch.distributed" in text) and "$1" in text


class Timm(Framework):
    name = "timm"
    title = "timm (pytorch-image-models)"
    programs = ("distributed_train.sh",)
    FLAGS = FLAGS
    short_flags = {"-b": "batch-size", "-c": "config", "-vb": "validation-batch-size", "-j": "workers"}
    reads = (
        "`./distributed_train.sh N …` (N processes per node), `torchrun … train.py …`, "
        "`python train.py …` with timm's flags",
        "`--model` (resnet50), `-b / --batch-size` (128), `--grad-accum-steps` (1), `--amp` / "
        "`--amp-dtype` (float16), `--model-dtype`, `--opt` (SGD, Nesterov momentum), "
        "`--grad-checkpointing`",
        "`-c / --config args.yaml`: its keys are the parser's defaults, the line's flags win",
    )
    not_read = (
        "the model's size: timm's model names are not in preflight's catalogue (params unknown; "
        "`--set params=…`)",
        "activations of an image model (they scale with `--img-size`, not a token sequence)",
        "`--model-ema` (a second copy of the weights), `--torchcompile`, `--channels-last`",
    )

    def reads_flags(self, flags: dict[str, Any], script: str) -> bool:
        if os.path.basename(script.strip()) != "train.py":
            # the scripts built on timm's data pipeline (`main.py`, `main_finetune.py`…)
            # share its augmentation flags but parse their own (`--accum_iter`, always-on
            # autocast): timm's defaults are not theirs
            return False
        keys = set(flag_values(flags))
        # `--model` with two of train.py's own flags, or its `-b` batch beside `--config`
        return ("model" in keys and len(keys & set(_MARKERS)) >= 2) or (
            "config" in keys and "-b" in flags)

    def flag_defaults(self, flags: dict[str, Any], script: str = "") -> list[tuple[str, Any, str]]:
        f = flag_values(flags)
        out: list[tuple[str, Any, str]] = []
        if "config" in f:
            return out        # the config file's keys are the defaults
        if "batch_size" not in f:
            out.append(("micro_batch", 128, "timm's train.py: --batch-size defaults to 128"))
        if "grad_accum_steps" not in f:
            out.append(("grad_accum", 1, "timm's train.py: --grad-accum-steps defaults to 1"))
        if "opt" not in f:
            out.append(("optimizer", "sgd_momentum", "timm's train.py: --opt defaults to sgd "
                                                     "(Nesterov momentum 0.9)"))
        if "model" not in f:
            out.append(("model", "resnet50", "timm's train.py: --model defaults to resnet50"))
        amp = _amp(True if "amp" in f and f["amp"] is None else f.get("amp"), f.get("amp_dtype"))
        if amp:
            out.append(("mixed_precision", amp, f"--amp: autocast to {f.get('amp_dtype') or 'float16'}"))
        else:
            out.append(("mixed_precision", "none", "no --amp: fp32 training"))
        if "model_dtype" not in f:
            out.append(("param_dtype", "fp32", "timm's train.py keeps fp32 weights unless --model-dtype"))
        if "grad_checkpointing" not in f:
            out.append(("activation_checkpointing", "none", "no --grad-checkpointing"))
        out += [("lora", False, "timm trains the whole network"),
                ("fsdp", None, "timm's train.py runs DDP"), ("zero_stage", 0, "timm's train.py runs DDP")]
        return out

    def claims(self, cfg: dict, path: str) -> bool:
        # an args.yaml: the parser's names as keys
        return isinstance(cfg.get("model"), str) and sum(k in cfg for k in _MARKERS) >= 3 and (
            "batch_size" in cfg or "opt" in cfg)

    def read_config(self, cfg: dict, o: ConfigOut) -> None:
        for key, (fact, conv) in FLAGS.items():
            v = cfg.get(key)
            if v is None or isinstance(v, (dict, list)) or v is False and fact != "activation_checkpointing":
                continue
            val = conv(str(v)) if not isinstance(v, bool) else conv(None if v else "false")
            if val is not None:
                o.put(fact, val, (key,))
        if "grad_checkpointing" in cfg and cfg["grad_checkpointing"] is False:
            o.put("activation_checkpointing", "none", ("grad_checkpointing",))
        if "amp" in cfg:
            mp = _amp(cfg["amp"], cfg.get("amp_dtype"))
            o.put("mixed_precision", mp or "none", ("amp",),
                  f"amp: {cfg['amp']}" + (f", amp_dtype: {cfg.get('amp_dtype', 'float16')}" if mp else ""))
        if not o.partial:
            if "model_dtype" not in cfg or cfg.get("model_dtype") is None:
                o.default("param_dtype", "fp32", ("model",), "timm keeps fp32 weights unless model_dtype")
            o.default("lora", False, ("model",), "timm trains the whole network")

    # `./distributed_train.sh N [flags]`: torchrun --nproc_per_node=N train.py [flags]
    def launch(self, prog: str, rest: list[str], line: Any, cwd: str = "") -> Optional[Invocation]:
        if not rest or not _timm_launcher(os.path.join(cwd or ".", prog)):
            return None
        n = flag_int(rest[0])
        facts = list(line.facts)
        if n is None:
            facts.append(("gpus_per_node", Fact.unknown(
                f"{prog}'s process count {rest[0]!r} is not a fixed number", source=line.source)))
        else:
            facts.append(("gpus_per_node", Fact(value=n, origin=line.origin, source=line.source,
                                                reason=f"{prog} {n}: torchrun --nproc_per_node={n}")))
        facts.append(("nodes", Fact(value=1, origin=Origin.DEFAULT, source=line.source,
                                    reason=f"{prog} runs torchrun on one node")))
        args = rest[1:]
        cfgs = []
        for i, a in enumerate(args):
            if a in ("-c", "--config") and i + 1 < len(args):
                cfgs.append(args[i + 1])
            elif a.startswith("--config="):
                cfgs.append(a.split("=", 1)[1])
        script = "train.py"
        return Invocation(script=script, args=args, source=line.source, facts=facts, configs=cfgs,
                          launcher="torchrun")


ADAPTER = Timm()

_RUN = """\
#!/bin/bash
./distributed_train.sh 8 --data-dir /data/imagenet --model resnet50 -b 256 --amp \\
    --opt lamb --sched cosine --epochs 100 --warmup-epochs 5 --grad-accum-steps 2
"""

_ARGS = """\
model: convnext_tiny
batch_size: 64
opt: adamw
sched: cosine
amp: true
amp_dtype: bfloat16
drop_path: 0.1
grad_checkpointing: false
epochs: 300
"""

Timm.EXAMPLES = [
    Example(title="`./distributed_train.sh 8` with timm's flags; `-b` is the batch size",
            files={"train.sh": _RUN}, paths=["train.sh"],
            facts={"model": ("resnet50", "train.sh:2"), "micro_batch": (256, "train.sh:2"),
                   "mixed_precision": ("fp16", "train.sh:2", "default"),
                   "optimizer": ("lamb", "train.sh:3"), "grad_accum": (2, "train.sh:3"),
                   "gpus_per_node": (8, "train.sh:2"), "param_dtype": ("fp32", "train.sh:2", "default")}),
    Example(title="`--config args.yaml` sets the defaults; a flag on the line wins",
            files={"args.yaml": _ARGS},
            command="torchrun --nproc_per_node=4 train.py --config args.yaml -b 32",
            facts={"model": ("convnext_tiny", "args.yaml:1"), "micro_batch": (32, "<command>:1", "cli"),
                   "optimizer": ("adamw", "args.yaml:3"), "mixed_precision": ("bf16", "args.yaml:5"),
                   "activation_checkpointing": ("none", "args.yaml:8"),
                   "gpus_per_node": (4, "<command>:1", "cli")}),
]
