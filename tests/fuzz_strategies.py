"""Hypothesis strategies for training-job files: Python scripts, shell launchers, DeepSpeed
JSON, YAML recipes and TOML configs. Each strategy draws (file name, text).

They build files the way real jobs are written (the vocabulary's keys and flags, launch
lines, model classes, argparse) and then push them to the edges the product must survive:
numbers past float and int() limits, exponent towers, gigabyte repetitions and format
widths, deep nesting and long chains, tags, aliases, broken syntax, random bytes spliced
in. Shared by the CI suite (`tests/test_fuzz.py`, a fixed budget) and the campaign script
(`bench/fuzz.py`).
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

# --------------------------------------------------------------------------- numbers

EDGE_INTS = [0, 1, -1, 7, 8, 2**31, 2**63 - 1, 2**63, 2**64 + 1, 10**15, 10**16,
             10**308, 10**309, -(10**20)]
EDGE_FLOATS = ["1e300", "1e999", "-1e999", "float('inf')", "float('nan')", "0.5", "1e-320",
               "3.0", "-0.0"]

number_text = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(EDGE_INTS).map(str),
    st.integers(min_value=300, max_value=6000).map(lambda n: "9" * n),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e300", "1e999", "-1e999", "0.5", "1e-320", "3.0"]),
)

# --------------------------------------------------------------------------- Python

NAMES = ["a", "b", "n", "batch_size", "seq_len", "hidden", "layers", "grad_accum", "lr",
         "micro_batch", "block_size", "world_size", "N", "args.batch_size", "cfg['bs']"]
FACT_KWARGS = ["per_device_train_batch_size", "gradient_accumulation_steps",
               "max_seq_length", "bf16", "fp16", "optim", "gradient_checkpointing",
               "deepspeed", "fsdp", "num_train_epochs", "learning_rate"]

_BOMBS = [
    '1000000000 * "a"', '"a" * 10**9', '[0] * 10**10', '"%01000000000d" % 1',
    'f"{1:>1000000000}"', '"{:>1000000000}".format(1)', "((10**255)**255)**255",
    "10 ** 10 ** 10", "1 << 10**9", "2 ** -10**9", "sum(range(10**12))",
    "list(range(10**12))", "max(range(10**15))", '"x".join(["a"] * 10**9)',
    '("a" * 10000).replace("a", "a" * 10000)', "int('9' * 5000)", "float('1e999')",
    "math.factorial(10**7)", "pow(7, 10**10)", "round(1.5, 10**9)", "-(-(-(-1)))",
    "{**{'a': 1}, **{}}", "[*range(10**9)]", "divmod(10**400, 7)",
]


def _expr(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(number_text, st.sampled_from(NAMES),
                     st.text(alphabet="abc%{}:>0123456789 ", max_size=12).map(repr),
                     st.sampled_from(EDGE_FLOATS), st.sampled_from(_BOMBS))
    if depth <= 0:
        return leaf
    sub = _expr(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "<<", ">>",
                                        "and", "or", "==", "<", "|", "&"]), sub)
        .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["int", "float", "str", "len", "min", "max", "sum",
                                   "abs", "round", "range", "list", "os.environ.get"]),
                  st.lists(sub, max_size=3)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(sub, sub, sub).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.lists(sub, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.tuples(sub, st.text(alphabet=">0123456789.,d", max_size=12))
        .map(lambda t: 'f"{' + t[0] + ':' + t[1] + '}"'),
    )


# pathological shapes: valid (or nearly valid) Python that native parsers and recursive
# evaluators choke on
_SHAPES = [
    lambda n: " and ".join(["a"] * n),
    lambda n: " + ".join(["a"] * n),
    lambda n: "(" * n + "1" + ")" * n,
    lambda n: "[" * n + "]" * n,
    lambda n: "f(" * n + ")" * n,
    lambda n: "-" * n + "1",
    lambda n: "not " * n + "a",
    lambda n: "a" + ".b" * n,
    lambda n: "a" + "[0]" * n,
    lambda n: "a" + "()" * n,
    lambda n: "a if b else " * n + "c",
    lambda n: "lambda: " * n + "1",
    lambda n: " ** ".join(["2"] * n),
    lambda n: " < ".join(["a"] * n),
]
pathological = st.tuples(st.sampled_from(_SHAPES),
                         st.sampled_from([10, 150, 250, 1000, 3000, 12000])
                         ).map(lambda t: t[0](t[1]))


def _stmt() -> st.SearchStrategy[str]:
    e = _expr(3)
    return st.one_of(
        st.tuples(st.sampled_from(NAMES[:13]), e).map(lambda t: f"{t[0]} = {t[1]}"),
        st.tuples(st.sampled_from(NAMES[:13]), st.sampled_from(["+=", "*=", "**=", "<<="]), e)
        .map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.lists(st.tuples(st.sampled_from(FACT_KWARGS), e), max_size=5)
        .map(lambda kw: "targs = TrainingArguments(output_dir='o', "
                        + ", ".join(f"{k}={v}" for k, v in kw) + ")"),
        st.tuples(st.sampled_from(["--batch_size", "--seq-len", "--lr", "--hidden"]),
                  st.sampled_from(["int", "float", "str"]), e)
        .map(lambda t: f"parser.add_argument('{t[0]}', type={t[1]}, default={t[2]})"),
        st.tuples(e, e).map(lambda t: f"model = nn.Linear({t[0]}, {t[1]})"),
        st.tuples(e, e).map(lambda t: f"for i in range({t[0]}):\n    x = {t[1]}"),
        st.tuples(e, e).map(lambda t: f"while {t[0]}:\n    n = {t[1]}"),
        pathological.map(lambda p: f"x = {p}"),
        e.map(lambda x: f"opt = torch.optim.AdamW(model.parameters(), lr={x})"),
        e.map(lambda x: f"exec(open({x}).read())"),
        st.just("exec(open('/etc/hostname').read())"),
    )


_MODEL = (
    "class Net(nn.Module):\n"
    "    def __init__(self, n={n}):\n"
    "        super().__init__()\n"
    "        k = {k}\n"
    "        self.layers = nn.ModuleList([nn.Linear(n, k) for _ in range({r})])\n\n"
    "net = Net()\n"
)

python_text = st.tuples(
    st.lists(_stmt(), max_size=8),
    st.one_of(st.none(), st.tuples(_expr(2), _expr(2), _expr(1))),
).map(lambda t: "import math\nimport os\nimport argparse\nimport torch\nfrom torch import nn\n"
                "from transformers import TrainingArguments\n"
                "parser = argparse.ArgumentParser()\n"
                + "\n".join(t[0]) + "\n"
                + (_MODEL.format(n=t[1][0], k=t[1][1], r=t[1][2]) if t[1] else ""))

# --------------------------------------------------------------------------- shell

def _arith(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(st.integers(-(2**65), 2**65).map(str),
                     st.sampled_from(["N", "$N", "${GPUS}", "0x1f", "16#ff", "010", "08",
                                      "9" * 30]))
    if depth <= 0:
        return leaf
    sub = _arith(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "%", "**", "<<", ">>", "&&",
                                        "||", "<", "==", "&", "|", "^"]), sub)
        .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(sub, sub, sub).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
        st.tuples(st.sampled_from(["-", "!", "~", "+"]), sub).map("".join),
        st.tuples(st.sampled_from(["+", "*", "**"]), st.integers(2, 6000))
        .map(lambda t: t[0].join(["1"] * t[1])),
    )


_LAUNCH = st.sampled_from([
    "torchrun --nproc_per_node={v} --nnodes={w} train.py --batch_size {v}",
    "deepspeed --num_gpus {v} train.py --deepspeed ds_config.json",
    "accelerate launch --num_processes {v} --config_file accel.yaml train.py",
    "python -m torch.distributed.run --nproc-per-node {v} train.py --seq_len {w}",
    "srun --ntasks-per-node={v} python train.py --micro_batch_size {w}",
    "python train.py --deepspeed ../outside.json --batch_size {v}",
    "python /etc/train.py --config /etc/passwd",
    "composer -n {v} train.py",
    "tune run --nproc_per_node {v} full_finetune_distributed --config recipe.yaml",
    # Hydra overrides (verl's roles, NeMo's apps): sets, adds, deletes, lists, odd keys
    "python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node={v} critic.enable=True "
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={w} +x.y=[1,2 ~z ++a.b={v} c..d=1",
    "torchrun --nproc_per_node {v} megatron_gpt_pretraining.py model.micro_batch_size={w} "
    "--config-name=recipe trainer.devices=-1 model.peft.peft_scheme=lora",
])

shell_text = st.tuples(
    st.lists(st.tuples(st.sampled_from(["N", "GPUS", "BS", "K"]), _arith(3)), max_size=5),
    st.lists(st.tuples(_LAUNCH, _arith(2), _arith(1)), min_size=1, max_size=3),
    st.sampled_from(["", "source ./env.sh\n", "ARR=(a b $((1+1)))\n",
                     "case $X in\n  a) N=2;;\nesac\n", "if [ $N -gt 1 ]; then\n  BS=4\nfi\n",
                     "cat <<EOF\n$((1/0))\nEOF\n", "export GPUS=${GPUS:-8}\n"]),
).map(lambda t: "#!/bin/bash\n"
                + "".join(f"{k}=$(({v}))\n" for k, v in t[0]) + t[2]
                + "".join(line.format(v=f"$(({a}))", w=f"$(({b}))") + "\n"
                          for line, a, b in t[1]))

# --------------------------------------------------------------------------- JSON

DS_KEYS = ["train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
           "gradient_clipping", "steps_per_print"]
json_leaf = st.one_of(st.sampled_from(["null", "true", "false"]), number_text, st.just('"auto"'),
                      st.text(max_size=8).map(json.dumps))


def _json_value(depth: int) -> st.SearchStrategy[str]:
    if depth <= 0:
        return json_leaf
    sub = _json_value(depth - 1)
    return st.one_of(
        json_leaf,
        st.lists(sub, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(st.text(max_size=6), sub), max_size=4)
        .map(lambda kv: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in kv) + "}"),
    )


json_text = st.one_of(
    st.tuples(st.lists(st.tuples(st.sampled_from(DS_KEYS), _json_value(1)), max_size=5),
              st.sampled_from(["0", "1", "2", "3", "-1", "4", "1e999", '"auto"', "99" * 3000]),
              st.sampled_from(["true", "false", '"cpu"', '{"device": "cpu"}', "1"]),
              st.sampled_from(["", '"bf16": {"enabled": true}', '"fp16": {"enabled": "auto"}',
                               '"optimizer": {"type": "AdamW", "params": {"lr": 1e999}}']))
    .map(lambda t: "{" + ", ".join([f'"{k}": {v}' for k, v in t[0]]
                                   + [f'"zero_optimization": {{"stage": {t[1]}, '
                                      f'"offload_optimizer": {t[2]}}}'] + ([t[3]] if t[3] else []))
         + "}"),
    _json_value(3),
    st.integers(1, 5000).map(lambda n: "[" * n + "]" * n),
)

# --------------------------------------------------------------------------- YAML

YAML_KEYS = ["batch_size", "micro_batch_size", "gradient_accumulation_steps", "max_seq_len",
             "num_processes", "distributed_type", "mixed_precision", "deepspeed_config",
             "zero_stage", "model_name_or_path", "lora_r", "per_device_train_batch_size",
             "cutoff_len", "sequence_len"]
yaml_scalar = st.one_of(number_text, st.sampled_from(
    [".inf", "-.inf", ".nan", "~", "yes", "0x1F", "0o17", "1_000", "'08'", "auto", "FSDP",
     "DEEPSPEED", "bf16", "!!python/name:os.system", "!!python/object:x.Y {}",
     "!!python/tuple [1, 2]", "!!binary aGVsbG8=", "!custom 3", "*ref", "&ref 4",
     "2001-12-14t21:59:43.10-05:00", "[1, [2, [3]]]", "{a: {b: 1}}", "|\n  text"]))

yaml_text = st.one_of(
    st.lists(st.tuples(st.sampled_from(YAML_KEYS), yaml_scalar), max_size=8)
    .map(lambda kv: "".join(f"{k}: {v}\n" for k, v in kv)),
    st.integers(1, 3000).map(lambda n: "a: " + "[" * n + "]" * n + "\n"),
    st.integers(2, 12).map(lambda n: "a: &a0 [x, x]\n" + "".join(
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n" for i in range(1, n))),
    st.just("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n"
            "  deepspeed_config_file: ../outside.json\nnum_processes: 8\n"),
    # Hydra / OmegaConf and includes (preflight.lang.hydra, preflight.lang.includes)
    st.sampled_from([
        "defaults:\n  - model: x\n  - _self_\nmodel:\n  a: ${.b}\n  b: ${model.a}\n",
        "a: ${eval:'9 ** 9 ** 9'}\nb: ${multiply:${a},${a}}\nc: ${oc.env:HOME,1}\nd: ${x:${y:${z}}}\n",
        "_base_: recipe.yaml\nbatch_size: 2\n", "x: !include recipe.yaml\n",
        "extends: [accel.yaml, recipe.yaml, ../outside.yaml]\n", "e: ${\nf: ${a.}\ng: ${[}\n",
        "defaults:\n  - override x: [a, b]\n  - optional /y@_global_: z\n  - ???\n  - 3\n",
        "trainer:\n  devices: ${oc.select:n,8}\n  precision: ${p}\nmodel:\n  micro_batch_size: ???\n"
        "  tensor_model_parallel_size: ${sum:1,1}\n  megatron_amp_O2: ${q}\n",
    ]),
    st.integers(1, 20000).map(lambda n: "defaults:\n  - _self_\n" + "\n" * n + "k: ${k}\n"),
    st.integers(1, 3000).map(lambda n: "".join(f"k{i}: ${{k{i + 1}}}\n" for i in range(n))),
)

# --------------------------------------------------------------------------- TOML

toml_value = st.one_of(number_text, st.sampled_from(
    ["inf", "-inf", "nan", "true", '"auto"', "[1, 2]", "{ a = 1 }", '"1e999GB"', '"80GB"',
     '"H100"', '""', "1979-05-27T07:32:00Z", "0x7fffffffffffffffff"]))

toml_text = st.one_of(
    st.lists(st.tuples(st.sampled_from(["training", "parallelism", "model",
                                        "activation_checkpoint"]),
                       st.sampled_from(["local_batch_size", "seq_len", "steps",
                                        "data_parallel_shard_degree", "tensor_parallel_degree",
                                        "pipeline_parallel_degree", "flavor", "mode",
                                        "mixed_precision_param"]),
                       toml_value), max_size=8)
    .map(lambda kv: "".join(f"[{s}]\n{k} = {v}\n" for s, k, v in kv)),
    st.lists(st.tuples(st.sampled_from(["gpu", "gpu-memory", "headroom", "select", "ignore",
                                        "fail-level", "read-outside-root", "models",
                                        "per-file-ignores"]), toml_value), max_size=5)
    .map(lambda kv: "[tool.preflight]\n" + "".join(f"{k} = {v}\n" for k, v in kv)),
    st.sampled_from(["tool = 1\n", "[tool]\npreflight = 3\n",
                     "[[tool.preflight.jobs]]\nentry = 5\ncommand = []\n"]),
)

# --------------------------------------------------------------------------- Python configs

PYCONFIG_VARS = ["model", "train_dataloader", "optim_wrapper", "train_cfg", "data", "optimizer",
                 "dataloader", "train", "fp16"]
pyconfig_value = st.one_of(number_text, st.sampled_from(
    ["'AmpOptimWrapper'", "'bfloat16'", "None", "[1, 2]", "{{_base_.model}}", "'{{_base_.x.y}}'",
     "_base_.model", "dict(_delete_=True, type='SGD')", "L(torch.optim.AdamW)(lr=1)",
     "os.environ['BS']", "2 ** 10 ** 9", "'a' * 10 ** 9", "x if y else z", "f'{a}'"]))

pyconfig_text = st.one_of(
    st.lists(st.tuples(st.sampled_from(PYCONFIG_VARS), st.sampled_from(
        ["batch_size", "type", "dtype", "accumulative_counts", "samples_per_gpu",
         "total_batch_size"]), pyconfig_value), max_size=8)
    .map(lambda kv: "".join(f"{v} = dict({k}={x})\n" for v, k, x in kv)),
    st.sampled_from(["_base_ = './cfg.py'\nmodel = dict(a=1)\n",
                     "_base_ = ['./cfg.py', '../none.py']\n",
                     "with read_base():\n    from .cfg import *\nmodel.update(a=1)\n",
                     "from .cfg import model\nmodel.x.y = 3\n",
                     "_base_ = 5\nx = {{_base_.a.b.c}}\n"]),
    st.integers(1, 300).map(lambda n: "x = " + "dict(a=" * n + "1" + ")" * n + "\n"),
    st.integers(1, 20000).map(lambda n: "train_dataloader = dict(batch_size=2)\n" + "\n" * n
                              + "optim_wrapper = dict(type='OptimWrapper')\n"),
    st.integers(1, 3000).map(lambda n: "train_dataloader = dict(batch_size=2)\n" * n),
    st.integers(1, 3000).map(lambda n: "train = dict(a=dict())\n" + "train.a.b = 1\n" * n),
)

# --------------------------------------------------------------------------- mutation

def mutate(text: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """A text with a few random edits: a span deleted, repeated, or random characters
    (control characters, NUL, unpaired surrogate-free unicode) spliced in."""
    edit = st.tuples(st.floats(0, 1), st.floats(0, 1),
                     st.sampled_from(["delete", "repeat", "insert"]),
                     st.text(max_size=8))

    def apply(args):
        s, edits = args
        for a, b, kind, ins in edits:
            if not s:
                break
            i, j = sorted((int(a * len(s)), int(b * len(s))))
            if kind == "delete":
                s = s[:i] + s[j:]
            elif kind == "repeat":
                s = s[:j] + s[i:j] * 3 + s[j:]
            else:
                s = s[:i] + ins + s[i:]
        return s

    return st.tuples(text, st.lists(edit, max_size=3)).map(apply)


#: generator name → strategy of (file name, text)
KINDS = {
    "python": st.tuples(st.sampled_from(["train.py", "finetune.py"]), mutate(python_text)),
    "shell": st.tuples(st.sampled_from(["run.sh", "launch.slurm", "Makefile"]),
                       mutate(shell_text)),
    "json": st.tuples(st.sampled_from(["ds_config.json", "zero3.json"]), mutate(json_text)),
    "yaml": st.tuples(st.sampled_from(["recipe.yaml", "accel.yaml"]), mutate(yaml_text)),
    "toml": st.tuples(st.sampled_from(["train.toml", "pyproject.toml"]), mutate(toml_text)),
    "pyconfig": st.tuples(st.sampled_from(["cfg.py", "mmcfg.py"]), mutate(pyconfig_text)),
}

#: a companion script so that launchers and configs form jobs
COMPANION = ("import torch\nimport deepspeed\nimport argparse\n"
             "p = argparse.ArgumentParser()\np.add_argument('--batch_size', type=int, default=4)\n"
             "args = p.parse_args()\n")
