"""The parts working together: the script's facts, the launcher, model resolution and the
estimator's inputs agree on one job."""

import os

import pytest

from preflight.assemble import assemble
from preflight.discover.jobs import discover

HEAD = ("import torch\n"
        "from transformers import (AutoModelForCausalLM, AutoModelForSequenceClassification,\n"
        "                          Trainer, TrainingArguments)\n\n")


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    return tmp_path


def plan_of(entry, command=None):
    specs, _ = discover([entry] if entry else [], command)
    (spec,) = specs
    return assemble(spec, {})


def test_model_and_size_come_from_the_first_model_loaded(proj):
    (proj / "train.py").write_text(
        HEAD + 'model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")\n'
        'reward = AutoModelForSequenceClassification.from_pretrained("gpt2")\n'
        'Trainer(model=model, args=TrainingArguments(output_dir="o")).train()\n')
    p = plan_of("train.py").plan
    assert (p.value("model"), str(p.source("model"))) == ("Qwen/Qwen2.5-0.5B", "train.py:5:46")
    assert (p.value("layers"), p.value("hidden")) == (24, 896)
    assert str(p.source("params")) == "train.py:5:9"
    assert 400_000_000 < p.value("params") < 600_000_000


def test_an_unknown_trained_model_is_not_sized_by_a_later_reference_model(proj):
    (proj / "train.py").write_text(
        HEAD + 'model = AutoModelForCausalLM.from_pretrained("acme-labs/house-model-7b")\n'
        'reward = AutoModelForSequenceClassification.from_pretrained("gpt2")\n'
        'Trainer(model=model, args=TrainingArguments(output_dir="o")).train()\n')
    job = plan_of("train.py")
    p = job.plan
    assert p.value("model") == "acme-labs/house-model-7b"
    assert not p.known("params") and not p.known("layers")
    assert [(d.code, d.line) for d in job.diagnostics if d.code == "PF004"] == [("PF004", 5)]


NANO = ("import os\n"
        "import torch\n"
        "batch_size = 12\n"
        "gradient_accumulation_steps = 5 * 8\n"
        "exec(open('configurator.py').read())\n"
        "ddp = int(os.environ.get('RANK', -1)) != -1\n"
        "if ddp:\n"
        "    torch.distributed.init_process_group(backend='nccl')\n"
        "    world = int(os.environ['WORLD_SIZE'])\n"
        "    gradient_accumulation_steps //= world\n"
        "model = torch.nn.Linear(8, 8)\n"
        "opt = torch.optim.AdamW(model.parameters())\n")
CONFIGURATOR = ("import sys\n"
                "for arg in sys.argv[1:]:\n"
                "    if '=' not in arg:\n"
                "        exec(open(arg).read())\n")


@pytest.fixture
def nano(proj):
    (proj / "train.py").write_text(NANO)
    (proj / "configurator.py").write_text(CONFIGURATOR)
    (proj / "config").mkdir()
    (proj / "config" / "x.py").write_text("batch_size = 16\ngradient_accumulation_steps = 32\n")
    return proj


def test_world_size_division_finished_with_the_launch_command(nano):
    job = plan_of(None, ["torchrun", "--nproc_per_node", "8", "train.py", "config/x.py"])
    f = job.plan.fact("grad_accum")
    assert (f.value, f.origin.value, str(f.source)) == (4, "derived", "train.py:10:5")
    # torchrun sets WORLD_SIZE=8 in the script's environment: the division is evaluated
    assert "`gradient_accumulation_steps //= world` from 32" in f.reason
    # the script's "not known statically" at that line is settled by the launcher
    assert not [d for d in job.diagnostics if d.code == "PF003" and d.line == 10]
    assert job.plan.value("micro_batch") == 16


def test_world_size_division_across_nodes(nano):
    job = plan_of(None, ["torchrun", "--nnodes", "2", "--nproc_per_node", "8", "train.py",
                         "config/x.py"])
    assert (job.plan.value("world_size"), job.plan.value("grad_accum")) == (16, 2)


def test_world_size_division_without_a_launcher_is_an_assumption(nano):
    f = plan_of("train.py").plan.fact("grad_accum")
    assert (f.value, f.origin.value, str(f.source)) == (40, "assumed", "train.py:10:5")


def test_no_adapter_is_lora_false_and_estimates_like_none(proj):
    (proj / "train.py").write_text(
        HEAD + 'model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")\n'
        'Trainer(model=model, args=TrainingArguments(output_dir="o", bf16=True)).train()\n')
    p = plan_of("train.py").plan
    f = p.fact("lora")
    assert (f.value, f.origin.value, f.reason) == (False, "default",
                                                   "no LoRA/PEFT adapter found in the job's files")
    from preflight.physics import estimate
    from preflight.plan import TrainingPlan
    vals = {n: p.value(n) for n in ("params", "param_dtype", "mixed_precision", "optimizer",
                                    "micro_batch", "seq_len", "layers", "hidden", "heads")}
    vals["seq_len"] = vals["seq_len"] or 512
    a = estimate(TrainingPlan.from_values({**vals, "lora": False}), "H100-SXM5-80GB").to_json()
    b = estimate(TrainingPlan.from_values({**vals, "lora": None}), "H100-SXM5-80GB").to_json()
    assert a == b and a["ledger"]["lines"]


def test_lora_in_the_script_is_a_dict(proj):
    (proj / "train.py").write_text(
        HEAD + "from peft import LoraConfig, get_peft_model\n"
        'model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")\n'
        'model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))\n'
        'Trainer(model=model, args=TrainingArguments(output_dir="o")).train()\n')
    p = plan_of("train.py").plan
    lora = p.value("lora")
    assert isinstance(lora, dict) and (lora["r"], lora["targets"]) == (8, ["q_proj", "v_proj"])
    assert p.value("trainable_params") < p.value("params") // 100


def test_resolver_gets_the_parsed_modules_and_parses_nothing_again(proj, monkeypatch):
    (proj / "train.py").write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(1000, 1000)\n\n"
        "model = Net()\n"
        "opt = torch.optim.AdamW(model.parameters())\n")
    import ast

    import libcst
    parses, cst_parses = [], []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda src, *a, **k: parses.append(src) or real(src, *a, **k))
    monkeypatch.setattr(libcst, "parse_module", lambda *a, **k: cst_parses.append(1))
    p = plan_of("train.py").plan
    assert p.value("params") == 1000 * 1000 + 1000
    # the extractor's `ast` tree, handed to the model counter; libcst parses nothing
    assert len([s for s in parses if "class Net" in str(s)]) == 1 and cst_parses == []


def test_resolution_family_from_the_catalogue():
    from preflight.models.catalog import family_from_name
    assert [family_from_name(n)[0] for n in ("Qwen/Qwen2.5-7B", "google/gemma-2b",
                                   "mistralai/Mistral-7B-v0.1", "gpt2", "acme/unknown")] == \
        ["llama", "llama", "llama", "gpt2", None]


def test_qlora_ledger_frozen_base_from_the_model_shapes(proj):
    (proj / "train.py").write_text(
        HEAD + "from transformers import BitsAndBytesConfig\n"
        "from peft import LoraConfig, get_peft_model\n"
        "bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_use_double_quant=True)\n"
        'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", quantization_config=bnb)\n'
        'model = get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "v_proj"]))\n'
        'Trainer(model=model, args=TrainingArguments(output_dir="o", bf16=True)).train()\n')
    p = plan_of("train.py").plan
    lora = p.value("lora")
    assert (lora["base_bits"], lora["double_quant"], lora["base_params"]) == (4, True, 6_738_415_616)
    from preflight.physics import estimate
    from preflight.physics.lora import frozen_base_bytes
    lines = [ln for ln in estimate(p, "H100-SXM5-80GB").ledger.lines if ln.label.startswith("frozen")]
    want, formula = frozen_base_bytes(lora, double_quant=True, other_bytes=2)
    assert [(ln.bytes, ln.formula) for ln in lines] == [(want, formula)]
    # 4-bit linear weights + 16-bit embeddings/norms/head: about 3.9 GB for a 7B base
    assert 3.8e9 < want < 3.9e9


def test_a_script_model_name_not_known_statically_yields_to_the_command_line(proj):
    (proj / "train.py").write_text(
        HEAD + "import os\n"
        'model = AutoModelForCausalLM.from_pretrained(os.environ["MODEL_DIR"])\n'
        'args = TrainingArguments(output_dir="o")\n'
        "Trainer(model=model, args=args).train()\n")
    job = plan_of(None, ["python", "train.py", "--model_name_or_path", "Qwen/Qwen2.5-0.5B",
                         "--per_device_train_batch_size", "2"])
    assert job.plan.value("layers") == 24


TITAN = os.path.join(os.path.dirname(__file__), "fixtures", "launch", "titan")
TT_INIT = '''from torchtitan.models.common import compute_ffn_hidden_dim


def _small(attn_backend="flex"):
    dim = 2048
    n_heads = 16
    n_layers = 12
    vocab_size = 32000
    return LlamaModel.Config(
        dim=dim,
        vocab_size=vocab_size,
        norm=RMSNorm.Config(normalized_shape=dim),
        layers=build_layers(
            n_layers=n_layers,
            dim=dim,
            n_heads=n_heads,
            n_kv_heads=4,
            hidden_dim=compute_ffn_hidden_dim(dim, multiple_of=256, ffn_dim_multiplier=1.3),
            rope=RoPE.Config(dim=dim // n_heads),
        ),
    )


flavors = {
    "small": _small,
}
'''
TT_REG = '''def llama_small():
    return Trainer.Config(
        model_spec=model_registry("small"),
        training=TrainingConfig(num_tokens_per_microbatch_per_dp_rank=2 * 2048,
                                max_context_length=2048),
    )
'''


def test_torchtitan_flavor_sizes_the_model(tmp_path, monkeypatch):
    import shutil
    root = tmp_path / "tt"
    shutil.copytree(TITAN, root)
    mod = root / "torchtitan" / "models" / "llamatoy"
    mod.mkdir()
    (mod / "__init__.py").write_text(TT_INIT)
    (mod / "config_registry.py").write_text(TT_REG)
    (root / "run.slurm").write_text(
        "#!/bin/bash\n#SBATCH --nodes=1\n"
        "srun torchrun --nproc_per_node 8 -m torchtitan.train --module llamatoy --config llama_small\n")
    monkeypatch.chdir(root)
    p = plan_of("run.slurm").plan
    assert p.value("model") == "llamatoy:small"
    ffn = 256 * ((int(1.3 * int(2 * 4 * 2048 / 3)) + 255) // 256)
    assert (p.value("layers"), p.value("hidden"), p.value("heads"), p.value("kv_heads"),
            p.value("vocab"), p.value("ffn_hidden")) == (12, 2048, 16, 4, 32000, ffn)
    # Llama: embeddings + head (untied) + per layer attention (GQA) + SwiGLU MLP + 2 norms, + final norm
    kv = 4 * (2048 // 16)
    layer = 2048 * 2048 * 2 + 2048 * kv * 2 + 3 * 2048 * ffn + 2 * 2048
    assert p.value("params") == 2 * 32000 * 2048 + 12 * layer + 2048
    assert str(p.source("params")) == "torchtitan/models/llamatoy/__init__.py:25:5"


def test_a_one_size_config_is_not_a_model(proj):
    (proj / "train.py").write_text(
        "import torch\nfrom dataclasses import dataclass\n\n"
        "@dataclass\nclass RopeConfig:\n    dim: int = 64\n    theta: float = 10000.0\n\n"
        "rope = RopeConfig(dim=64)\n"
        "model = torch.nn.Linear(8, 8)\n"
        "opt = torch.optim.AdamW(model.parameters())\n")
    p = plan_of("train.py").plan
    assert not p.known("hidden")


MEGATRON_ARGS = ("--num-layers 24 --hidden-size 2304 --num-attention-heads 24 --seq-length 2048 "
                 "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64")


def _megatron(proj, extra):
    (proj / "pretrain_gpt.py").write_text("import torch\n\ndef main():\n    pass\n")
    (proj / "run.sh").write_text(
        f"#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py {MEGATRON_ARGS} {extra} --bf16\n")
    return plan_of("run.sh").plan


def test_megatron_command_line_sizes_the_model(proj):
    p = _megatron(proj, "--tokenizer-type GPT2BPETokenizer --vocab-file v.json --merge-file m.txt")
    assert (p.value("params"), p.value("vocab"), p.fact("params").origin.value) == \
        (1_650_166_272, 50304, "derived")
    assert (p.value("layers"), p.value("hidden")) == (24, 2304)


def test_megatron_bpe_files_without_a_tokenizer_type_assume_gpt2(proj):
    p = _megatron(proj, "--vocab-file $VOCAB --merge-file $MERGES")
    assert (p.value("params"), p.fact("params").origin.value) == (1_650_166_272, "assumed")
    assert (p.value("vocab"), p.fact("vocab").origin.value) == (50304, "assumed")


def test_megatron_llama2_tokenizer_vocab(proj):
    p = _megatron(proj, "--tokenizer-type Llama2Tokenizer --tokenizer-model $TOK")
    assert p.value("vocab") == 32000


def test_megatron_attention_backend(proj):
    assert _megatron(proj, "--tokenizer-type GPT2BPETokenizer --attention-backend fused").value(
        "attention") == "flash"
    assert _megatron(proj, "--tokenizer-type GPT2BPETokenizer --attention-backend unfused").value(
        "attention") == "eager"


def test_litgpt_recipe_attention_is_sdpa():
    from preflight.extract import extract_file
    from preflight.plan import merge
    e = extract_file(os.path.join(os.path.dirname(__file__), "fixtures", "launch", "repo",
                                  "recipes", "litgpt.yaml"))
    f = merge(e.facts).fact("attention")
    assert (f.value, f.origin.value) == ("sdpa", "default")


def test_all_linear_in_a_target_list_counts_every_block_linear():
    from preflight.resolve.entry import resolve
    base = [{"kind": "hub", "name": "meta-llama/Llama-2-7b-hf", "source": None}]

    def trainable(targets):
        facts, _ = resolve(base + [{"kind": "lora", "r": 32, "targets": targets, "source": None}],
                           search_dirs=["."], project_models={}, params_override=None)
        return dict(facts)["trainable_params"].value
    # q, k, v, o: 4 × 32 × (4096 + 4096); gate, up, down: 3 × 32 × (4096 + 11008); 32 layers
    want = 32 * (4 * 32 * 8192 + 3 * 32 * (4096 + 11008))
    assert trainable(["all-linear"]) == trainable("all-linear") == want


def test_command_line_lora_rank_sizes_the_adapters_over_a_script_rank_not_known(proj):
    (proj / "train.py").write_text(
        HEAD + "import os\nfrom peft import LoraConfig, get_peft_model\n"
        'model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")\n'
        'cfg = LoraConfig(r=int(os.environ["RANK_R"]), target_modules="all-linear")\n'
        "model = get_peft_model(model, cfg)\n"
        'Trainer(model=model, args=TrainingArguments(output_dir="o")).train()\n')
    p = plan_of(None, ["python", "train.py", "--use_peft_lora", "True", "--lora_r", "8",
                       "--lora_target_modules", "all-linear"]).plan
    assert p.value("lora")["r"] == 8
    assert p.known("trainable_params") and p.value("trainable_params") > 0


def test_a_wrapper_with_no_parameters_of_its_own_is_not_a_size(proj):
    (proj / "train.py").write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Wrapper(nn.Module):\n"
        "    def __init__(self, net, pad=0):\n"
        "        super().__init__()\n"
        "        self.net = net\n"
        "        self.pad = pad\n\n"
        "model = Wrapper(make_net())\n"
        "opt = torch.optim.Adam(model.parameters())\n")
    p = plan_of("train.py").plan
    assert not p.known("params")


def test_gpt_neox_heads_kv_heads_and_attention(tmp_path):
    from preflight.extract import extract_file
    from preflight.plan import merge
    p = tmp_path / "m.yml"
    p.write_text('{\n  "num_layers": 12,\n  "hidden_size": 768,\n  "num_attention_heads": 12,\n'
                 '  "seq_length": 2048,\n  "train_micro_batch_size_per_gpu": 4\n}\n')
    plan = merge(extract_file(str(p)).facts)
    assert (plan.value("kv_heads"), plan.fact("kv_heads").origin.value) == (12, "default")
    assert (plan.value("attention"), plan.fact("attention").origin.value) == ("eager", "default")
    p.write_text('{\n  "num_layers": 12,\n  "num_attention_heads": 12,\n  "num_kv_heads": 4,\n'
                 '  "attention_config": [[["flash"], 12]],\n  "seq_length": 2048\n}\n')
    plan = merge(extract_file(str(p)).facts)
    assert (plan.value("kv_heads"), plan.fact("kv_heads").origin.value) == (4, "config")
    assert (plan.value("attention"), str(plan.source("attention").line)) == ("flash", "5")


def test_class_sizes_by_its_init_parameter_names_and_bptt_sequence(proj):
    (proj / "lm.py").write_text(
        "import torch.nn as nn\n\n"
        "class TinyLM(nn.Module):\n"
        "    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):\n"
        "        super().__init__()\n"
        "        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)\n"
        "        self.encoder = nn.TransformerEncoder(layer, nlayers)\n"
        "        self.embed = nn.Embedding(ntoken, ninp)\n"
        "        self.head = nn.Linear(ninp, ntoken)\n")
    (proj / "main.py").write_text(
        "import argparse\nimport torch\nfrom lm import TinyLM\n\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--emsize', type=int, default=128)\n"
        "parser.add_argument('--nhid', type=int, default=256)\n"
        "parser.add_argument('--nlayers', type=int, default=3)\n"
        "parser.add_argument('--nhead', type=int, default=4)\n"
        "parser.add_argument('--bptt', type=int, default=48)\n"
        "parser.add_argument('--batch_size', type=int, default=20)\n"
        "args = parser.parse_args()\n"
        "vocab = load_vocab()\n"
        "model = TinyLM(len(vocab), args.emsize, args.nhead, args.nhid, args.nlayers)\n"
        "opt = torch.optim.AdamW(model.parameters())\n")
    p = plan_of(None, ["python", "main.py", "--nlayers", "4"]).plan
    assert (p.value("layers"), p.value("hidden"), p.value("heads"), p.value("ffn_hidden")) == \
        (4, 128, 4, 256)
    assert not p.known("params") and not p.known("vocab")      # the vocabulary comes from data
    assert (p.value("seq_len"), p.fact("seq_len").origin.value) == (48, "default")


BERT_MLM = (
    "import torch\nimport torch.nn as nn\n"
    "from transformers import BertConfig, BertModel, BertPreTrainedModel\n"
    "from transformers.models.bert.modeling_bert import BertLMPredictionHead\n\n"
    "class MyHead({base}):\n"
    "    def __init__(self, config, weight):\n"
    "        super().__init__(config)\n"
    "        {body}\n\n"
    "class MLM(BertPreTrainedModel):\n"
    "    def __init__(self, config, encoder):\n"
    "        super().__init__(config)\n"
    "        self.encoder = encoder\n"
    "        self.head = MyHead(config, self.encoder.embeddings.word_embeddings.weight)\n\n"
    "hidden = 128\n"
    "cfg = BertConfig.from_dict({{'model_type': 'bert', 'hidden_size': hidden, "
    "'num_hidden_layers': 2, 'num_attention_heads': 4, 'intermediate_size': 4 * hidden, "
    "'vocab_size': 1000, 'max_position_embeddings': 128, 'type_vocab_size': 2}})\n"
    "model = MLM(cfg, BertModel(cfg))\n"
    "opt = torch.optim.AdamW(model.parameters())\n")


def test_custom_class_around_a_transformers_model_built_from_a_config_dict(proj):
    from preflight.models import formulas
    (proj / "train.py").write_text(BERT_MLM.format(
        base="nn.Module", body="self.dense = nn.Linear(config.hidden_size, config.hidden_size)"))
    p = plan_of("train.py").plan
    assert (p.value("layers"), p.value("hidden"), p.value("heads"), p.value("vocab")) == (2, 128, 4, 1000)
    base = formulas.count("bert", {"hidden_size": 128, "num_hidden_layers": 2,
                                   "num_attention_heads": 4, "intermediate_size": 512,
                                   "vocab_size": 1000, "max_position_embeddings": 128,
                                   "type_vocab_size": 2}, head="base").params
    assert p.value("params") == base + 128 * 128 + 128


def test_a_head_built_by_a_library_base_class_is_counted_with_its_ties(proj):
    # transformers 4.x's BertLMPredictionHead: transform (dense h→h, LayerNorm), decoder h→V
    # whose bias is the head's own `bias`; the script ties the decoder's weight to the word
    # embeddings, so the head adds dense + LayerNorm + one V bias
    from preflight.models import formulas
    (proj / "train.py").write_text(BERT_MLM.format(
        base="BertLMPredictionHead", body="self.decoder.weight = weight"))
    p = plan_of("train.py").plan
    base = formulas.count("bert", {"hidden_size": 128, "num_hidden_layers": 2,
                                   "num_attention_heads": 4, "intermediate_size": 512,
                                   "vocab_size": 1000, "max_position_embeddings": 128,
                                   "type_vocab_size": 2}, head="base").params
    assert base == 557_952      # sum(p.numel() for p in BertModel(cfg).parameters())
    assert p.value("params") == base + (128 * 128 + 128) + 2 * 128 + 1000
    assert p.value("layers") == 2 and p.fact("params").origin.value == "derived"


def test_cli_check_finishes_the_world_size_division(nano):
    import json

    from tests.conftest import run_cli
    r = run_cli("check", "--format", "json", "--exit-zero", "--", "torchrun", "--nproc_per_node",
                "8", "train.py", "config/x.py", cwd=str(nano))
    assert r.returncode == 0, r.stderr
    (job,) = json.loads(r.stdout)["jobs"]
    ga = job["facts"]["grad_accum"]
    assert (ga["value"], ga["origin"]) == (4, "derived")
    assert job["facts"]["lora"]["value"] is False
    r = run_cli("check", "--exit-zero", "--", "torchrun", "--nproc_per_node", "8", "train.py",
                "config/x.py", cwd=str(nano))
    assert r.returncode == 0 and "Traceback" not in r.stderr


def test_a_dict_key_written_under_an_unknown_condition_is_not_a_literal(tmp_path):
    from preflight.extract.python import extract
    from preflight.plan import merge
    text = ("import torch\nfrom transformers import AutoModelForCausalLM\n\n"
            "def load(args):\n"
            "    kw = {'torch_dtype': torch.bfloat16}\n"
            "    if args.use_flash_attn:\n"
            "        kw['attn_implementation'] = 'flash_attention_2'\n"
            "    return AutoModelForCausalLM.from_pretrained(args.model, **kw)\n")
    plan = merge(extract(str(tmp_path / "m.py"), text, None).facts)
    assert not plan.known("attention")
    assert "depends on `args.use_flash_attn`" in plan.fact("attention").reason
    assert (plan.value("param_dtype"), plan.fact("param_dtype").origin.value) == ("bf16", "literal")


def test_another_librarys_loader_gets_no_transformers_attention_default(tmp_path):
    from preflight.extract.python import extract
    from preflight.plan import merge
    text = ("from unsloth import FastLanguageModel\n"
            "model, tok = FastLanguageModel.from_pretrained(model_name='unsloth/llama-3-8b')\n"
            "from transformers import Trainer, TrainingArguments\n"
            "Trainer(model=model, args=TrainingArguments(output_dir='o')).train()\n")
    plan = merge(extract(str(tmp_path / "m.py"), text, None).facts)
    assert plan.value("attention") != "sdpa"
