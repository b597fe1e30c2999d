"""One fixture script per pattern: exact value, origin and line of every fact it yields."""
import os
import textwrap

import pytest

from preflight.extract.python import extract
from preflight.plan import merge

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "python")


def load(name):
    path = os.path.join(FIX, name)
    with open(path, encoding="utf-8") as fh:
        return path, fh.read()


def line_of(text, snippet):
    """The 1-based line holding `snippet` (which must occur exactly once)."""
    hits = [i for i, line in enumerate(text.splitlines(), 1) if snippet in line]
    assert len(hits) == 1, (snippet, hits)
    return hits[0]


def plan_of(name, args=None, cwd=None):
    path, text = load(name)
    if cwd:
        old = os.getcwd()
        os.chdir(cwd)
        try:
            ext = extract(os.path.basename(path), text, args)
        finally:
            os.chdir(old)
    else:
        ext = extract(path, text, args)
    return ext, merge(ext.facts), text


def check(plan, text, expected):
    for name, (value, origin, snippet) in expected.items():
        f = plan.facts.get(name)
        assert f is not None, f"{name} missing; have {sorted(plan.facts)}"
        assert (f.value, f.origin.value) == (value, origin), (name, f)
        if snippet is not None:
            assert f.source is not None and f.source.line == line_of(text, snippet), (name, f.source)


def test_hf_trainer_dataclasses_cli_and_qlora():
    ext, plan, text = plan_of("hf_trainer.py", ["--lora_r", "16", "--q_lora", "True",
                                                "--per_device_train_batch_size", "2"])
    check(plan, text, {
        "micro_batch": (2, "cli", "parse_args_into_dataclasses()"),
        "grad_accum": (1, "default", "parse_args_into_dataclasses()"),
        "optimizer": ("adamw", "default", 'optim: str = field(default="adamw_torch")'),
        "mixed_precision": ("none", "default", "parse_args_into_dataclasses()"),
        # q_lora: prepare_model_for_kbit_training turns gradient checkpointing on
        "activation_checkpointing": ("full", "default", "prepare_model_for_kbit_training(model)"),
        "seq_len": (512, "default", "model_max_length: int = field(default=512)"),
        "param_dtype": ("int4", "literal", "BitsAndBytesConfig(load_in_4bit=True"),
        "model": ("facebook/opt-125m", "default", 'model_name_or_path: Optional[str]'),
    })
    lora = plan.facts["lora"]
    # lora_dropout not written: peft's LoraConfig default, 0.0
    assert lora.value == {"r": 16, "alpha": 16, "targets": ["q_proj", "v_proj"],
                          "base_bits": 4, "modules_to_save": [], "dropout": 0.0,
                          "adapter_dtype": "fp32"}      # get_peft_model's default
    assert lora.origin.value == "cli"
    assert lora.source.line == line_of(text, "lora_config = LoraConfig(")
    kinds = [(r["kind"], r.get("name")) for r in ext.extras["model_refs"]]
    assert ("hub", "facebook/opt-125m") in kinds and ("lora", None) in kinds
    hub = next(r for r in ext.extras["model_refs"] if r["kind"] == "hub")
    assert hub["kwargs"]["torch_dtype"] == "torch.bfloat16"
    assert hub["kwargs"]["quantization_config"]["kwargs"]["load_in_4bit"] is True


def test_hf_trainer_without_cli_uses_defaults():
    ext, plan, text = plan_of("hf_trainer.py", [])
    check(plan, text, {"micro_batch": (8, "default", "parse_args_into_dataclasses()")})
    # no --q_lora: the base model stays bf16 (torch_dtype), LoRA over 16-bit weights
    assert plan.facts["param_dtype"].value == "bf16"
    assert plan.facts["param_dtype"].source.line == line_of(text, "torch_dtype=torch.bfloat16")
    assert plan.facts["lora"].value["r"] == 8 and plan.facts["lora"].value["base_bits"] == 16


def test_trainer_arguments_literals_fstring_and_environment():
    ext, plan, text = plan_of("trainer_literal.py")
    check(plan, text, {
        "model": ("meta-llama/Llama-2-7b-hf", "literal", 'MODEL_ID = f"'),
        "attention": ("flash", "literal", 'attn_implementation="flash_attention_2"'),
        "micro_batch": (4, "literal", "PER_GPU = 2 * 2"),
        "optimizer": ("paged_adamw_8bit", "literal", 'optim="paged_adamw_8bit"'),
        "mixed_precision": ("fp16", "literal", "fp16=True"),
        "activation_checkpointing": ("full", "literal", "gradient_checkpointing=True"),
    })
    ga = plan.facts["grad_accum"]
    assert ga.origin.value == "unknown" and ga.default == 16
    assert "GRAD_ACC" in ga.reason
    assert ga.source.line == line_of(text, "GRAD_ACC")
    assert ext.references == ["configs/zero3.json"]
    assert any(d.code == "PF003" and d.line == line_of(text, "GRAD_ACC") for d in ext.diagnostics)


def test_accelerate_argparse_config_dict_and_eval_loader_ignored():
    ext, plan, text = plan_of("accelerate_loop.py",
                              ["--mixed_precision", "fp16", "--gradient-accumulation-steps=2"])
    check(plan, text, {
        "mixed_precision": ("fp16", "cli", 'parser.add_argument("--mixed_precision"'),
        "grad_accum": (2, "cli", '"--gradient-accumulation-steps"'),
        "model": ("bert-base-cased", "default", '"--model_name"'),
        "activation_checkpointing": ("full", "literal", "gradient_checkpointing_enable()"),
        "micro_batch": (16, "literal", '"batch_size": 16}'),
        "optimizer": ("adamw", "literal", "optim.AdamW("),
    })
    assert 32 not in [f.value for n, f in ext.facts if n == "micro_batch"]


def test_accelerate_argparse_defaults_when_no_cli():
    ext, plan, text = plan_of("accelerate_loop.py", [])
    assert plan.facts["grad_accum"].value == 1
    assert plan.facts["grad_accum"].origin.value == "default"
    # Accelerator(mixed_precision=None): the launcher's config decides, the script says nothing
    assert "mixed_precision" not in plan.facts


def test_lightning_trainer_and_aliased_bnb_optimizer():
    ext, plan, text = plan_of("lightning_train.py")
    check(plan, text, {
        "mixed_precision": ("bf16", "literal", 'precision="bf16-mixed"'),
        "grad_accum": (4, "literal", "accumulate_grad_batches=4"),
        "nodes": (2, "literal", "num_nodes=2"),
        "gpus_per_node": (8, "literal", "devices=8"),
        "zero_stage": (3, "literal", "deepspeed_stage_3_offload"),
        "offload": ("optimizer+params", "literal", "deepspeed_stage_3_offload"),
        "optimizer": ("paged_adamw_8bit", "literal", "return Opt("),
    })


def test_fsdp_tensor_parallel_flash_and_environment_batch():
    ext, plan, text = plan_of("fsdp_tp.py")
    check(plan, text, {
        "attention": ("flash", "literal", "return flash_attn_func("),
        "tp": (2, "literal", "init_device_mesh("),
        "mixed_precision": ("bf16", "literal", "MixedPrecision(param_dtype=torch.bfloat16"),
        "fsdp": ("hybrid_shard", "literal", "ShardingStrategy.HYBRID_SHARD"),
        "offload": ("optimizer+params", "literal", "CPUOffload(offload_params=True)"),
        "activation_checkpointing": ("full", "literal", "apply_activation_checkpointing(model)"),
    })
    mb = plan.facts["micro_batch"]
    assert (mb.origin.value, mb.default) == ("unknown", 4)
    assert mb.source.line == line_of(text, "MICRO_BATCH = int(")


def test_deepspeed_dict_built_in_a_fire_entry_point():
    ext, plan, text = plan_of("deepspeed_dict.py", ["--stage", "3"])
    check(plan, text, {
        "zero_stage": (3, "cli", "def train("),
        "offload": ("optimizer", "literal", '"offload_optimizer": {"device": "cpu"}'),
        "micro_batch": (8, "default", "def train("),
        "grad_accum": (4, "literal", '"gradient_accumulation_steps": 4'),
        # the section name is the default of parameter `dtype`: a default, written at the key
        "mixed_precision": ("bf16", "default", 'dtype: {"enabled": True}'),
        "optimizer": ("adamw", "literal", '"type": "Adam"'),
        "seq_len": (512, "default", "def train("),
    })


def test_plain_loop_half_sgd_momentum_autocast_default_manual_attention():
    ext, plan, text = plan_of("plain_loop.py")
    check(plan, text, {
        "param_dtype": ("fp16", "literal", "model = Net().cuda().half()"),
        "optimizer": ("sgd_momentum", "literal", "torch.optim.SGD("),
        "micro_batch": (32, "literal", "batch_size=32"),
        "mixed_precision": ("fp16", "default", 'with torch.autocast("cuda")'),
        "attention": ("eager", "derived", "F.softmax(q @ k.transpose"),
        "grad_accum": (1, "default", None),
    })
    assert ext.extras["names"]["name"] == "tiny-512"
    assert ext.extras["names"]["steps"] == 1000


def test_nanogpt_globals_without_config():
    ext, plan, text = plan_of("nanogpt_train.py", [])
    check(plan, text, {
        "micro_batch": (12, "literal", "batch_size = 12"),
        "seq_len": (1024, "literal", "block_size = 1024"),
        "optimizer": ("adamw", "literal", "torch.optim.AdamW("),
        # the model class, never its config class
        "model": ("GPT", "derived", "model = GPT(gptconf)"),
    })
    # the dtype depends on the GPU: said, not guessed
    assert not plan.facts["mixed_precision"].known
    assert "is_bf16_supported" in plan.facts["mixed_precision"].reason or \
        "torch.cuda" in plan.facts["mixed_precision"].reason
    # gradient_accumulation_steps //= ddp_world_size: unknown, both outcomes visible
    ga = plan.facts["grad_accum"]
    assert not ga.known and ga.default["if_false"] == 40
    assert ga.default["if_true"]["default"] == 40
    assert ga.source.line == line_of(text, "gradient_accumulation_steps //= ddp_world_size")
    pend = ext.extras["world_size_dependent"]["gradient_accumulation_steps"]
    assert (pend["value"], pend["op"], pend["fact"], pend["env"]) == (40, "//", "grad_accum",
                                                                      "WORLD_SIZE")
    cfg = next(r for r in ext.extras["model_refs"] if r["kind"] == "config")
    assert cfg["class"] == "GPTConfig"
    assert cfg["fields"] == {"n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024,
                             "bias": False, "vocab_size": 50304, "dropout": 0.0}
    cls = next(r for r in ext.extras["model_refs"] if r["kind"] == "class")
    assert cls["class"] == "GPT" and cls["args"][0]["call"] == "GPTConfig"


def test_nanogpt_config_file_then_cli_override():
    ext, plan, text = plan_of("nanogpt_train.py", ["config_shakespeare.py", "--batch_size=32"],
                              cwd=FIX)
    _, cfg_text = load("config_shakespeare.py")
    mb = plan.facts["micro_batch"]
    assert (mb.value, mb.origin.value) == (32, "cli")
    sl = plan.facts["seq_len"]
    assert (sl.value, sl.origin.value) == (256, "config")
    assert sl.source.path == "config_shakespeare.py"
    assert sl.source.line == line_of(cfg_text, "block_size = 256")
    mp = plan.facts["mixed_precision"]
    assert (mp.value, mp.origin.value) == ("fp16", "config")
    assert mp.source.line == line_of(cfg_text, "dtype = 'float16'")
    assert plan.facts["grad_accum"].default["if_false"] == 1
    cfg = next(r for r in ext.extras["model_refs"] if r["kind"] == "config")
    assert cfg["fields"]["n_layer"] == 6 and cfg["fields"]["block_size"] == 256
    assert "config_shakespeare.py" in ext.references


def test_nanogpt_missing_config_file_is_reported_not_raised(tmp_path):
    path, text = load("nanogpt_train.py")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        ext = extract("train.py", text, ["nope.py"])
    finally:
        os.chdir(old)
    assert any(d.code == "PF003" and "nope.py" in d.message for d in ext.diagnostics)
    assert merge(ext.facts).facts["micro_batch"].value == 12


def test_auto_config_dtype_cast_tokenizer_checkpoint_sdpa_fully_shard():
    ext, plan, text = plan_of("misc_patterns.py")
    check(plan, text, {
        "model": ("Qwen/Qwen2-0.5B", "literal", "AutoConfig.from_pretrained("),
        "param_dtype": ("bf16", "literal", "model = model.to(torch.bfloat16)"),
        "seq_len": (4096, "literal", "max_length=4096"),
        "fsdp": ("shard_grad_op", "literal", "reshard_after_forward=False"),
        "mixed_precision": ("bf16", "literal", "torch.amp.autocast("),
        "activation_checkpointing": ("full", "literal", "return checkpoint("),
        "attention": ("sdpa", "literal", "F.scaled_dot_product_attention("),
    })
    # torch.set_default_dtype(torch.float32) came first: still a candidate, overridden later
    dtypes = [(f.value, f.source.line) for n, f in ext.facts if n == "param_dtype"]
    assert dtypes[0] == ("fp32", line_of(text, "torch.set_default_dtype"))
    ref = next(r for r in ext.extras["model_refs"] if r["kind"] == "auto_config")
    assert (ref["name"], ref["overrides"]) == ("Qwen/Qwen2-0.5B", {"num_hidden_layers": 12})


@pytest.mark.parametrize("fixture", ["misc_patterns.py", "hf_trainer.py", "trainer_literal.py", "accelerate_loop.py",
                                     "lightning_train.py", "fsdp_tp.py", "deepspeed_dict.py",
                                     "plain_loop.py", "nanogpt_train.py"])
def test_enum_spellings_and_tree_on_demand(fixture):
    import ast
    import pickle

    from preflight.extract import stats
    from preflight.extract.python import syntax_tree
    from preflight.plan import ENUMS, FACT_NAMES, INT_FACTS
    ext, plan, text = plan_of(fixture)
    # the extraction is plain data (cacheable), but for the `ast` tree of a script that
    # builds a model class it defines, kept in memory for the model counter
    kept = ext.extras.get("tree")
    builds_own = set(ext.extras["classes"]) & {r.get("class") for r in ext.extras["model_refs"]}
    assert (kept is not None) == bool(builds_own)
    plain = ext.model_copy(update={"extras": {k: v for k, v in ext.extras.items() if k != "tree"}})
    assert pickle.loads(pickle.dumps(plain)) == plain
    # the counter's tree: that one, else parsed once when asked
    before = stats["ast_reparses"]
    code = syntax_tree(ext)
    assert isinstance(code.tree, ast.Module) and code.text == text
    assert syntax_tree(ext).tree is code.tree
    assert stats["ast_reparses"] == before + (kept is None)
    if kept is not None:
        assert code.tree is kept
    for name, f in ext.facts:
        assert name in FACT_NAMES
        if f.known and name in ENUMS and f.value is not None:
            assert f.value in ENUMS[name], (name, f.value)
        if f.known and name in INT_FACTS:
            assert isinstance(f.value, int) and not isinstance(f.value, bool), (name, f.value)
        if not f.known:
            assert f.reason


def test_hf_arguments_json_file_named_by_sys_argv():
    ext, plan, text = plan_of("hf_json_args.py", ["hf_args.json"], cwd=FIX)
    _, js = load("hf_args.json")
    mb = plan.facts["micro_batch"]
    assert (mb.value, mb.origin.value, mb.source.path) == (6, "config", "hf_args.json")
    assert (mb.source.line, mb.source.col) == (line_of(js, "per_device_train_batch_size"), 3)
    assert (plan.value("mixed_precision"), plan.facts["mixed_precision"].origin.value) == ("bf16", "config")
    assert "hf_args.json" in ext.references
    # the other branch of `if len(sys.argv) == 2 and sys.argv[1].endswith(".json")`
    ext, plan, text = plan_of("hf_json_args.py", ["--per_device_train_batch_size", "3"])
    assert (plan.value("micro_batch"), plan.facts["micro_batch"].origin.value) == (3, "cli")
    assert plan.facts["micro_batch"].source.line == line_of(text, "parse_args_into_dataclasses()")


def test_trl_parser_library_defaults_and_peft_from_the_command_line():
    args = ["--model_name_or_path", "Qwen/Qwen2-0.5B", "--per_device_train_batch_size", "2",
            "--use_peft", "--lora_r", "32", "--lora_alpha", "16"]
    ext, plan, text = plan_of("trl_sft.py", args)
    at = "parse_args_and_config()"
    check(plan, text, {
        "model": ("Qwen/Qwen2-0.5B", "cli", at),
        "micro_batch": (2, "cli", at),
        "grad_accum": (1, "default", at),
        "seq_len": (1024, "default", at),                      # SFTConfig max_length
        "activation_checkpointing": ("full", "default", at),   # TRL turns it on by default
        "mixed_precision": ("bf16", "default", at),            # bf16 unless fp16
        "optimizer": ("adamw", "default", at),
        "attention": ("sdpa", "default", "trainer = SFTTrainer("),
    })
    lora = plan.facts["lora"]
    # TRL's ModelConfig default lora_dropout, 0.05
    assert lora.value == {"r": 32, "alpha": 16, "targets": [], "base_bits": 16,
                          "modules_to_save": [], "dropout": 0.05,
                          "adapter_dtype": "fp32"}      # peft's default in TRL's trainers
    assert lora.origin.value == "cli"
    # without --use_peft there is no LoRA, and that is a default, not a guess
    ext, plan, text = plan_of("trl_sft.py", [])
    assert plan.facts["lora"].value is None and plan.facts["lora"].origin.value == "default"
    # ModelConfig has no default model name: said unknown, with why
    assert not plan.facts["model"].known
    assert plan.facts["model"].reason == ("the model name is None (ModelConfig default): the "
                                          "launch does not give it")


def test_where_the_model_lives_how_it_was_cast_and_a_fused_optimizer():
    """`model.to(device)` with a known device, a cast of the whole model (its buffers with
    it), `fused=True` / `capturable=True` on a torch optimizer (step counts on the device)."""
    text = ("import torch\n"
            "from transformers import LlamaConfig, LlamaForCausalLM\n"
            "model = LlamaForCausalLM(LlamaConfig(num_hidden_layers=2))\n"
            "model = model.to(torch.bfloat16)\n"
            'device = "cpu"\n'
            "model = model.to(device)\n"
            "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)\n")
    plan = merge(extract("train.py", text, []).facts)
    check(plan, text, {"param_dtype": ("bf16", "literal", "model.to(torch.bfloat16)"),
                       "model_cast": (True, "literal", "model.to(torch.bfloat16)"),
                       "device": ("cpu", "literal", "model.to(device)"),
                       "optimizer_fused": (True, "literal", "fused=True")})
    plain = ("import torch\n"
             "model = MyModel()\n"
             "model = model.to('cuda:0')\n"
             "optimizer = torch.optim.AdamW(model.parameters(), capturable=False)\n")
    plan = merge(extract("train.py", plain, []).facts)
    assert plan.facts["device"].value == "cuda"
    assert "model_cast" not in plan.facts and "optimizer_fused" not in plan.facts


def test_weights_loaded_in_half_precision_without_autocast_train_in_it():
    """`from_pretrained(..., torch_dtype=torch.bfloat16)` and no autocast, GradScaler or
    mixed-precision setting: pure bf16 training, said at the load; an autocast anywhere in
    the script, or a trainer whose arguments decide, leaves it to them."""
    text = ("import torch\n"
            "from transformers import AutoModelForCausalLM\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2', torch_dtype=torch.bfloat16)\n"
            "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)\n"
            "for batch in loader:\n"
            "    model(**batch).loss.backward()\n"
            "    optimizer.step()\n")
    plan = merge(extract("train.py", text, []).facts)
    check(plan, text, {"param_dtype": ("bf16", "literal", "torch_dtype=torch.bfloat16"),
                       "mixed_precision": ("none", "default", "torch_dtype=torch.bfloat16")})
    amp = text.replace("    model(**batch)", "    with torch.autocast('cuda'):\n        model(**batch)")
    plan = merge(extract("train.py", amp, []).facts)
    assert plan.facts["mixed_precision"].value == "fp16"
    trainer = text.replace("optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)\n",
                           "from transformers import Trainer\nTrainer(model=model, args=args)\n")
    plan = merge(extract("train.py", trainer, []).facts)
    assert plan.facts.get("mixed_precision") is None or \
        plan.facts["mixed_precision"].reason != "the weights are bf16 and the script has no " \
        "autocast / GradScaler / mixed-precision setting"


def test_default_dtype_reset_after_the_model_is_built_keeps_its_weights():
    ext, plan, text = plan_of("default_dtype_reset.py")
    check(plan, text, {
        "param_dtype": ("bf16", "literal", "torch.set_default_dtype(torch.bfloat16)"),
    })
    # the reset to float32 after `model = Tiny()` is no setting of the model's weights
    assert [f.value for n, f in ext.facts if n == "param_dtype"] == ["bf16"]


def test_fully_shard_in_one_arm_of_an_undecided_choice_is_not_certain():
    ext, plan, text = plan_of("fsdp_one_arm.py")
    f = plan.facts["fsdp"]
    assert (f.value, f.origin.value) == (None, "unknown"), f
    assert f.source.line == line_of(text, "model = fully_shard(")
    assert f.default == {"alternatives": ["full_shard", None]}
    assert "'full_shard' if" in f.reason and "None otherwise" in f.reason


def test_fsdp2_policy_with_a_run_time_dtype_leaves_mixed_precision_unknown():
    ext, plan, text = plan_of("fsdp2_policy_runtime_dtype.py")
    f = plan.facts["mixed_precision"]
    assert (f.value, f.origin.value) == (None, "unknown"), f
    assert f.source.line == line_of(text, "mp_policy=MixedPrecisionPolicy(")
    assert "MixedPrecisionPolicy: its param_dtype is not known statically" in f.reason
    # the policy says nothing of the weights' own dtype
    assert "param_dtype" not in plan.facts or plan.facts["param_dtype"].value == "fp32"


@pytest.mark.parametrize("call", [
    'model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": '
    'False, "context_fn": sac})',
    "y = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False, context_fn=sac)",
    "block = torch.distributed.algorithms._checkpoint.checkpoint_wrapper.checkpoint_wrapper("
    "block, context_fn=sac)",
])
def test_a_selective_checkpointing_policy_is_unknown_not_full(call, tmp_path):
    """A `context_fn` (create_selective_checkpoint_contexts) keeps what its policy says,
    more than full checkpointing: the fact is an explicit unknown at the call."""
    text = ("import torch\nfrom torch.utils.checkpoint import create_selective_checkpoint_"
            "contexts\n\ndef sac():\n    return create_selective_checkpoint_contexts(lambda "
            "ctx, f, *a, **k: None)\n\n" + call + "\n")
    path = str(tmp_path / "train.py")
    f = merge(extract(path, text, None).facts).facts["activation_checkpointing"]
    assert (f.value, f.origin.value, f.source.line) == (None, "unknown", 7)
    assert "context_fn" in f.reason and "selective_op" in f.reason
    plain = merge(extract(path, text.replace(", context_fn=sac", "").replace(
        ', "context_fn": sac', ""), None).facts).facts["activation_checkpointing"]
    assert (plain.value, plain.source.line) == ("full", 7)


def test_a_model_name_left_at_none_is_said_so_not_not_found():
    # TRL's `ModelConfig.model_name_or_path` defaults to None: the launch must give it
    text = textwrap.dedent("""
        from dataclasses import dataclass
        from transformers import AutoModelForCausalLM, HfArgumentParser

        @dataclass
        class ModelArgs:
            model_name_or_path: str = None

        (margs,) = HfArgumentParser((ModelArgs,)).parse_args_into_dataclasses()
        model = AutoModelForCausalLM.from_pretrained(margs.model_name_or_path)
        model.train()
    """)
    ext = extract("t.py", text)
    f = merge(ext.facts).facts["model"]
    assert not f.known
    assert f.reason == ("the model name is None (dataclass default of model_name_or_path): "
                        "the launch does not give it")


def test_a_flag_read_only_in_an_arm_that_does_not_run_is_not_the_jobs():
    """`--batch-size` read only where `args.arch == "gpt2"`: with `--arch llama` the flag's
    default is not the job's micro-batch (said nowhere rather than 32); with the arch
    flag left to its default the arm runs and the flag is read."""
    from preflight.lang.python.cli_examples import _ARCH_BRANCHES

    llama = merge(extract("train.py", _ARCH_BRANCHES, ["--arch", "llama"]).facts)
    assert "micro_batch" not in llama.facts
    assert llama.facts["model"].value == "meta-llama/Llama-2-7b-hf"
    plain = merge(extract("train.py", _ARCH_BRANCHES, []).facts)
    assert (plain.facts["micro_batch"].value, plain.facts["micro_batch"].origin.value) == \
        (32, "default")


def test_arms_of_one_choice_are_exclusive():
    from preflight.lang.python.arms import exclusive

    t, f = "`a` is true (line 3)", "`a` is false (line 3)"
    assert exclusive((t,), (f,))
    assert exclusive((t, "`b` is true (line 5)"), (f,))
    assert not exclusive((t,), (t, "`b` is true (line 5)"))
    assert not exclusive((t,), ("`b` is false (line 9)",))
    assert exclusive(("m (line 7): branch 1",), ("m (line 7): branch 2",))
    assert not exclusive((), (t,))


def test_a_half_copy_saved_in_a_checkpoint_is_no_cast_of_the_weights():
    """Autocast over a model built in fp32, and `torch.save({k: v.half() ...})` of its
    state dict (MiniMind's checkpoints): the trained weights stay fp32."""
    text = ("import torch\n"
            "model = torch.nn.Linear(8, 8)\n"
            "opt = torch.optim.AdamW(model.parameters())\n"
            "for x in loader:\n"
            "    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
            "        loss = model(x).sum()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "torch.save({k: v.half() for k, v in model.state_dict().items()}, 'ckpt.pth')\n")
    plan = merge(extract("train.py", text, []).facts)
    check(plan, text, {"param_dtype": ("fp32", "default", "torch.autocast"),
                       "mixed_precision": ("bf16", "literal", "torch.autocast")})
