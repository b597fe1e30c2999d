"""Models defined by the repository's own code: the config a class is built from (a dict of
configs keyed by a flag), parameters counted from the source, and what stays unknown."""

import textwrap

import pytest

import preflight
from preflight.plan import Origin


def _job(tmp_path, files: dict, *, command=None, paths=None):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    kw = {"command": command} if command else {}
    r = preflight.check([str(tmp_path / p) for p in (paths or [])], cache=False, **kw)
    assert r.jobs, "no job"
    return r.jobs[0].job.plan


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


GPT_SCRIPT = """
    import argparse
    from dataclasses import dataclass
    import torch
    import torch.nn as nn

    @dataclass
    class GPTConfig:
        block_size: int = 1024
        vocab_size: int = 50257
        n_layer: int = 12
        n_embd: int = 768

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.fc = nn.Linear(config.n_embd, 4 * config.n_embd)

    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)
            self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
            self.rng = torch.Generator()
            self.rng.manual_seed(42)

    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=str, default=SIZE)
    args = parser.parse_args()
    model_config = {
        "d2": GPTConfig(n_layer=2, n_embd=64, vocab_size=100),
        "d4": GPTConfig(n_layer=4, n_embd=128, vocab_size=100),
    }[args.model]
    model = GPT(model_config)
    optimizer = torch.optim.AdamW(model.parameters())
"""


def _count(layers, hidden, vocab=100):
    return vocab * hidden + layers * (hidden * 4 * hidden + 4 * hidden)


def test_a_dict_of_configs_keyed_by_a_given_flag_picks_that_entry(tmp_path):
    plan = _job(tmp_path, {"train.py": GPT_SCRIPT.replace("SIZE", '"d4"')},
                command=["python", "train.py", "--model", "d2"])
    assert plan.value("layers") == 2
    assert plan.value("hidden") == 64
    assert plan.value("params") == _count(2, 64)
    f = plan.fact("params")
    assert f.origin is Origin.DERIVED
    assert (f.source.path.endswith("train.py"), f.source.line) == (True, 34)


def test_a_dict_of_configs_keyed_by_the_flag_default(tmp_path):
    plan = _job(tmp_path, {"train.py": GPT_SCRIPT.replace("SIZE", '"d4"')},
                paths=["train.py"])
    assert (plan.value("layers"), plan.value("hidden")) == (4, 128)
    assert plan.value("params") == _count(4, 128)


def test_an_undecidable_key_is_unknown_with_its_alternatives(tmp_path):
    script = GPT_SCRIPT.replace("SIZE", "None").replace(
        "args = parser.parse_args()",
        "args = parser.parse_args()\n    import os\n    args.model = os.environ['SIZE']")
    plan = _job(tmp_path, {"train.py": script}, paths=["train.py"])
    f = plan.fact("params")
    assert not f.known
    assert "one of 2 configs" in f.reason
    assert "layers 2, hidden 64, vocab 100" in f.reason
    assert "layers 4, hidden 128, vocab 100" in f.reason
    # never the last (or largest) entry
    assert not plan.known("layers") and not plan.known("hidden")


PADDED = """
    import math
    import torch
    import torch.nn as nn

    def next_multiple_of_n(v, *, n):
        return math.ceil(v / n) * n

    class GPT(nn.Module):
        def __init__(self, vocab_size: int, num_layers: int, num_heads: int, model_dim: int):
            super().__init__()
            self.vocab_size = next_multiple_of_n(vocab_size, n=128)
            self.embed = nn.Embedding(self.vocab_size, model_dim)
            self.blocks = nn.ModuleList([nn.Linear(model_dim, model_dim)
                                         for _ in range(num_layers)])

    model = GPT(vocab_size=50257, num_layers=2, num_heads=4, model_dim=64)
    optimizer = torch.optim.AdamW(model.parameters())
"""


def test_a_vocabulary_the_class_pads_on_itself(tmp_path):
    plan = _job(tmp_path, {"train.py": PADDED}, paths=["train.py"])
    assert plan.value("vocab") == 50304
    assert plan.value("hidden") == 64           # model_dim names the hidden size
    assert (plan.value("layers"), plan.value("heads")) == (2, 4)
    assert plan.value("params") == 50304 * 64 + 2 * (64 * 64 + 64)
    f = plan.fact("vocab")
    assert f.origin is Origin.DERIVED and f.source.line == 17
    assert "vocab 50257 → 50304: as GPT.__init__ sets it on itself" in f.reason


def test_a_padded_vocabulary_when_the_count_is_unknown(tmp_path):
    text = PADDED.replace("self.blocks = nn.ModuleList",
                          "self.extra = SomethingElse()\n            self.blocks = nn.ModuleList")
    plan = _job(tmp_path, {"train.py": text}, paths=["train.py"])
    assert not plan.known("params")
    assert plan.value("vocab") == 50304
    assert plan.fact("vocab").origin is Origin.DERIVED


REGISTRY = {
    "mylib/__init__.py": "",
    "mylib/config.py": """
        from dataclasses import dataclass

        @dataclass
        class Config:
            name: str = "base"
            block_size: int = 4096
            vocab_size: int = 50254
            padding_multiple: int = 512
            n_layer: int = 16
            n_head: int = 32
            n_embd: int = 4096
            bias: bool = True
            _mlp_class: str = "GptNeoxMLP"
            _norm_class: str = "LayerNorm"
            intermediate_size: int = None
            n_query_groups: int = None

            @classmethod
            def from_name(cls, name):
                return cls(**name_to_config[name])

        configs = [
            dict(name="tiny-2l", block_size=256, vocab_size=1000, padding_multiple=64,
                 n_layer=2, n_head=4, n_embd=64, n_query_groups=2, intermediate_size=128,
                 bias=False, _mlp_class="LLaMAMLP", _norm_class="RMSNorm"),
            dict(name="neox-2l", vocab_size=1000, padding_multiple=128, n_layer=2, n_head=4,
                 n_embd=64),
        ]
        name_to_config = {c["name"]: c for c in configs}
    """,
    "mylib/model.py": """
        import torch.nn as nn
        from mylib.config import Config

        class GPT(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.config = config
    """,
    "scripts/train.py": """
        import torch
        from mylib.model import GPT, Config

        model_name = "MODEL"
        config = Config.from_name(model_name)
        model = GPT(config)
        optimizer = torch.optim.AdamW(model.parameters())
    """,
}


def _registry_job(tmp_path, model):
    files = dict(REGISTRY, **{"scripts/train.py": REGISTRY["scripts/train.py"].replace(
        "MODEL", model)})
    return _job(tmp_path, files, paths=["scripts/train.py"])


def test_a_model_named_in_a_registry_of_the_repository(tmp_path):
    plan = _registry_job(tmp_path, "tiny-2l")
    # vocabulary 1000 padded to 1024; a gated MLP with RMSNorm and no biases: a Llama
    assert plan.value("params") == 2 * 1024 * 64 + 2 * (4096 + 2 * 2048 + 4096 + 3 * 64 * 128
                                                         + 2 * 64) + 64
    assert {k: plan.value(k) for k in ("layers", "hidden", "heads", "kv_heads", "vocab")} == \
        {"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "vocab": 1024}
    f = plan.fact("params")
    assert f.origin is Origin.DERIVED
    assert (f.source.path, f.source.line) == ("mylib/config.py", 24)
    seq = plan.fact("seq_len")
    assert (seq.value, seq.origin, seq.source.line) == (256, Origin.CATALOG, 24)


def test_a_registry_entry_with_the_class_defaults(tmp_path):
    plan = _registry_job(tmp_path, "neox-2l")
    # GPT-NeoX layout from the class defaults: biases, LayerNorm, a 4·h MLP, vocab 1024
    h, V = 64, 1024
    layer = (h * 3 * h + 3 * h) + (h * h + h) + (h * 4 * h + 4 * h) + (4 * h * h + h) + 4 * h
    assert plan.value("params") == 2 * V * h + 2 * layer + 2 * h
    assert plan.value("vocab") == V


def test_a_name_not_in_the_registry_stays_unknown(tmp_path):
    plan = _registry_job(tmp_path, "not-there")
    assert not plan.known("params")
    assert "not in preflight's offline catalogue" in plan.fact("params").reason


MEGATRON_LINE = """
    #!/bin/bash
    torchrun --nproc_per_node 8 pretrain_gpt.py \\
        --tensor-model-parallel-size 2 --num-layers 2 --hidden-size 64 \\
        --num-attention-heads 4 --seq-length 128 --micro-batch-size 1 \\
        --global-batch-size 8 --vocab-size 1024 --fp16 EXTRA
"""


@pytest.mark.parametrize("arguments,extra,want", [
    # a Megatron with no flash or Transformer Engine switch at all: its unfused attention
    ("group.add_argument('--checkpoint-activations', action='store_true')", "", "eager"),
    # a newer Megatron-LM: Transformer Engine picks the kernel; not told by this line
    ("group.add_argument('--transformer-impl', default='transformer_engine')", "", None),
    # ... unless the line gives a flag only the Megatron before Megatron-Core accepts
    ("group.add_argument('--transformer-impl', default='transformer_engine')",
     "--DDP-impl local", "eager"),
    ("group.add_argument('--use-flash-attn', action='store_true')", "--use-flash-attn", "flash"),
])
def test_megatron_attention_without_a_flag(tmp_path, arguments, extra, want):
    plan = _job(tmp_path, {"run.sh": MEGATRON_LINE.replace("EXTRA", extra),
                           "pretrain_gpt.py": "import megatron\n",
                           "megatron/arguments.py": arguments + "\n"}, paths=["run.sh"])
    f = plan.fact("attention")
    assert f.value == want
    if want == "eager":
        assert f.origin is Origin.DEFAULT and f.source.path.endswith("run.sh")
        assert f.reason.startswith("Megatron-LM default: ")


NEOX = """
    {
      "pipe_parallel_size": 1,
      "model_parallel_size": 2,
      "num_layers": 2,
      "hidden_size": 64,
      "num_attention_heads": 4,
      "seq_length": 128,
      "pos_emb": "rotary",
      "no_weight_tying": true,
      "train_micro_batch_size_per_gpu": 4,
      TOKENIZER
    }
"""


def _neox_count(V, h=64, L=2):
    layer = (h * 3 * h + 3 * h) + (h * h + h) + (h * 4 * h + 4 * h) + (4 * h * h + h) + 4 * h
    return 2 * V * h + L * layer + 2 * h


@pytest.mark.parametrize("tokenizer,vocab,origin", [
    # GPT-2 BPE (the default tokenizer): 50257 padded to a multiple of 128 × 2
    ('"tokenizer_type": "GPT2BPETokenizer"', 50432, Origin.DERIVED),
    # a tokenizer file at hand is read: 1000 tokens padded to 1024
    ('"tokenizer_type": "HFTokenizer", "vocab_file": "tok.json"', 1024, Origin.DERIVED),
    # a published file by its name when it is not at hand: an assumption, said so
    ('"tokenizer_type": "HFTokenizer", "vocab_file": "ckpt/20B_tokenizer.json"', 50432,
     Origin.ASSUMED),
])
def test_gpt_neox_vocabulary_padded_to_the_model_parallel_multiple(tmp_path, tokenizer, vocab,
                                                                    origin):
    import json
    (tmp_path / "tok.json").write_text(json.dumps(
        {"model": {"vocab": {f"t{i}": i for i in range(998)}},
         "added_tokens": [{"id": 998}, {"id": 999}]}))
    plan = _job(tmp_path, {"configs/small.yml": NEOX.replace("TOKENIZER", tokenizer)},
                command=["python", "./deepy.py", "train.py", "-d", "configs", "small.yml"])
    assert plan.value("vocab") == vocab
    f = plan.fact("params")
    assert (f.value, f.origin) == (_neox_count(vocab), origin)
    assert (f.source.path, f.source.line) == ("configs/small.yml", 5)


def test_gpt_neox_tokenizer_file_not_at_hand_is_unknown(tmp_path):
    plan = _job(tmp_path, {"configs/small.yml": NEOX.replace(
        "TOKENIZER", '"tokenizer_type": "HFTokenizer", "vocab_file": "mine.json"')},
        command=["python", "./deepy.py", "train.py", "-d", "configs", "small.yml"])
    assert not plan.known("params") and not plan.known("vocab")
    assert "the tokenizer file mine.json is not at hand" in plan.fact("params").reason


WRAPPER = """
    import torch
    import torch.nn as nn

    class Decoder(nn.Module):
        def __init__(self, dim, depth, heads):
            super().__init__()
            self.dim = dim
            self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])

    class Wrapper(nn.Module):
        def __init__(self, num_tokens, max_seq_len, attn_layers):
            super().__init__()
            self.emb = nn.Embedding(num_tokens, attn_layers.dim)
            self.attn_layers = attn_layers

    model = Wrapper(num_tokens=256, max_seq_len=1024,
                    attn_layers=Decoder(dim=64, depth=2, heads=4))
    optimizer = torch.optim.AdamW(model.parameters())
"""


def test_a_wrapper_argument_beside_the_layers_object_it_is_given(tmp_path):
    plan = _job(tmp_path, {"train.py": WRAPPER}, paths=["train.py"])
    assert {k: plan.value(k) for k in ("vocab", "hidden", "layers", "heads")} == \
        {"vocab": 256, "hidden": 64, "layers": 2, "heads": 4}
    f = plan.fact("vocab")
    assert f.origin is Origin.DERIVED and (f.source.path, f.source.line) == ("train.py", 17)


MLM_HEAD = """
    import torch
    from transformers import RobertaConfig, RobertaModel
    from transformers.models.roberta.modeling_roberta import (RobertaLMHead,
                                                              RobertaPreTrainedModel)

    class Head(RobertaLMHead):
        def __init__(self, config, embedding_weight=None):
            super().__init__(config)
            if embedding_weight is not None:
                self.decoder.weight = embedding_weight

    class MLM(RobertaPreTrainedModel):
        def __init__(self, config, encoder):
            super().__init__(config)
            self.encoder = encoder
            self.lm_head = Head(config, self.encoder.embeddings.word_embeddings.weight)

    config = RobertaConfig.from_dict({"model_type": "roberta", "hidden_size": 32,
                                      "num_hidden_layers": 1, "num_attention_heads": 4,
                                      "intermediate_size": 64, "vocab_size": 100,
                                      "max_position_embeddings": 40, "type_vocab_size": 1})
    encoder = RobertaModel(config)
    model = MLM(config, encoder)
    optimizer = torch.optim.AdamW(model.parameters())
"""


def test_a_subclass_of_a_transformers_masked_lm_head_tied_to_the_embeddings(tmp_path):
    plan = _job(tmp_path, {"train.py": MLM_HEAD}, paths=["train.py"])
    embeddings = 100 * 32 + 40 * 32 + 32 + 2 * 32
    layer = 3 * (32 * 32 + 32) + (32 * 32 + 32) + 64 + (32 * 64 + 64) + (64 * 32 + 32) + 64
    pooler = 32 * 32 + 32
    head = (32 * 32 + 32) + 2 * 32 + 100        # dense, LayerNorm, the decoder's bias
    f = plan.fact("params")
    assert f.value == embeddings + layer + pooler + head
    assert f.origin is Origin.DERIVED and (f.source.path, f.source.line) == ("train.py", 24)


def test_a_config_named_by_the_path_of_its_json_file(tmp_path):
    plan = _job(tmp_path, {
        "configs/tiny.json": '{"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,'
                             ' "num_attention_heads": 4, "num_hidden_layers": 2,'
                             ' "vocab_size": 1000}',
        "train.py": """
            import torch
            from transformers import AutoConfig, AutoModelForCausalLM
            config = AutoConfig.from_pretrained("configs/tiny.json")
            model = AutoModelForCausalLM.from_config(config)
            optimizer = torch.optim.AdamW(model.parameters())
        """}, paths=["train.py"])
    h, V, F = 64, 1000, 128
    assert plan.value("params") == 2 * V * h + 2 * (4 * h * h + 3 * h * F + 2 * h) + h
    assert plan.fact("params").origin is Origin.CATALOG
    assert plan.value("layers") == 2


ATTN_MODEL = {
    "mypkg/__init__.py": "",
    "mypkg/modeling.py": """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        IMPORT

        class Net(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.proj = nn.Linear(config.dim, config.dim)

            def attend(self, q, k, v, fast):
                if fast:
                    return KERNEL
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    """,
    "train.py": """
        import torch
        from mypkg.modeling import Net
        from dataclasses import dataclass

        @dataclass
        class NetConfig:
            dim: int = 64
            n_layer: int = 2

        model = Net(NetConfig())
        optimizer = torch.optim.AdamW(model.parameters())
    """,
}


@pytest.mark.parametrize("imports,kernel,want,origin", [
    # one kernel: that one
    ("", "F.scaled_dot_product_attention(q, k, v)", "sdpa", Origin.DERIVED),
    # flash-attn imported at the top, SDPA the fallback: the flash path, assumed
    ("from flash_attn import flash_attn_func", "flash_attn_func(q, k, v, causal=True)", "flash",
     Origin.ASSUMED),
    # a hand-written softmax beside SDPA: not decided
    ("", "torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v", None, None),
])
def test_the_attention_kernel_of_a_model_class_of_the_repository(tmp_path, imports, kernel, want,
                                                                  origin):
    files = dict(ATTN_MODEL)
    files["mypkg/modeling.py"] = files["mypkg/modeling.py"].replace("IMPORT", imports).replace(
        "KERNEL", kernel)
    plan = _job(tmp_path, files, paths=["train.py"])
    f = plan.fact("attention")
    assert f.value == want
    if want is not None:
        assert f.origin is origin and f.source.path == "mypkg/modeling.py"
        assert f.source.line == 14


PACKAGE_MODEL = {
    "vlm/__init__.py": "",
    "vlm/model.py": """
        import torch
        import torch.nn as nn
        from vlm.lm import LM

        class VLM(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.lm = LM(config)

            def sample(self, logits, t):
                return torch.softmax(logits / t, dim=-1)     # sampling, not attention
    """,
    "vlm/lm.py": """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class LM(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")

            def attend(self, q, k, v):
                if self.sdpa:
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
                att = q @ k.transpose(-2, -1)
                return F.softmax(att, dim=-1) @ v
    """,
    "train.py": """
        import torch
        from vlm.model import VLM
        model = VLM({"dim": 64, "n_layer": 2})
        optimizer = torch.optim.AdamW(model.parameters())
    """,
}


def test_the_attention_of_the_package_modules_a_model_imports(tmp_path):
    plan = _job(tmp_path, PACKAGE_MODEL, paths=["train.py"])
    f = plan.fact("attention")
    # SDPA where torch has it; the hand-written path is the fallback for torch < 2.0, and a
    # softmax of logits in generation code is no attention
    assert (f.value, f.origin) == ("sdpa", Origin.DERIVED)
    assert (f.source.path, f.source.line) == ("vlm/lm.py", 13)
    assert "fallback for torch < 2.0" in f.reason


def test_a_softmax_passed_as_a_function_keeps_the_attention_undecided(tmp_path):
    files = dict(PACKAGE_MODEL)
    files["vlm/lm.py"] = files["vlm/lm.py"].replace(
        'self.sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")',
        "self.attn_fn = partial(F.softmax, dim=-1)").replace(
        "import torch.nn.functional as F", "import torch.nn.functional as F\n"
        "        from functools import partial").replace(
        "att = q @ k.transpose(-2, -1)\n                return F.softmax(att, dim=-1) @ v",
        "return self.attn_fn(q @ k.transpose(-2, -1)) @ v")
    assert "partial(F.softmax" in files["vlm/lm.py"]
    plan = _job(tmp_path, files, paths=["train.py"])
    assert not plan.known("attention")


DOC_SCRIPT = """
    import transformers
    from dataclasses import dataclass, field

    @dataclass
    class ModelArguments:
        model_name_or_path: str = field(default="facebook/opt-125m")

    parser = transformers.HfArgumentParser((ModelArguments, transformers.TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()
    model = transformers.AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    special = {}
    if tokenizer.pad_token is None:
        special["pad_token"] = "[PAD]"
    tokenizer.add_special_tokens(special)
    model.resize_token_embeddings(len(tokenizer))
    trainer = transformers.Trainer(model=model, args=training_args)
    trainer.train()
"""

DOC_README = """
    # Fine-tuning

    We fine-tune LLaMA-7B and LLaMA-13B with these settings.

    ```bash
    pip install -r requirements.txt
    ```

    Below is a command that fine-tunes LLaMA-7B on 4 GPUs in FSDP mode.
    Replace `<your_model_path>` with the path of your converted checkpoint.

    ```bash
    torchrun --nproc_per_node=4 train.py --model_name_or_path <your_model_path> \\
        --fsdp "full_shard auto_wrap" --output_dir out
    ```

    To save memory, here is DeepSpeed with offload:

    ```bash
    torchrun --nproc_per_node=4 train.py --model_name_or_path <your_model_path> \\
        --deepspeed ds.json --output_dir out
    ```
"""


def _doc_job(tmp_path, flags):
    return _job(tmp_path, {"train.py": DOC_SCRIPT, "README.md": DOC_README},
                command=["torchrun", "--nproc_per_node=4", "train.py", "--model_name_or_path",
                         "<your_model_path>", *flags, "--output_dir", "out"])


def test_a_placeholder_model_named_by_the_documented_commands_prose(tmp_path):
    plan = _doc_job(tmp_path, ["--fsdp", "full_shard auto_wrap"])
    f = plan.fact("params")
    # LLaMA-7B, named once in the paragraph right before the command (the table above it
    # names two models and is not that paragraph); the added pad token is not counted
    assert (f.value, f.origin) == (6_738_415_616, Origin.INFERRED)
    assert (f.source.path, f.source.line) == ("README.md", 10)
    assert "<your_model_path> is a placeholder" in f.reason
    assert "without the tokens the script adds" in f.reason
    assert (plan.value("layers"), plan.fact("layers").origin) == (32, Origin.INFERRED)
    v = plan.fact("vocab")
    assert not v.known and "32000 plus the tokens the script adds" in v.reason
    # the model fact stays the placeholder the command gives
    assert plan.fact("model").value == "<your_model_path>"


def test_a_placeholder_whose_documented_prose_names_no_model_stays_unknown(tmp_path):
    plan = _doc_job(tmp_path, ["--deepspeed", "ds.json"])
    assert not plan.known("params") and not plan.known("layers")


TWO_MODELS = {
    "nets.py": """
        import torch.nn as nn

        class RNNNet(nn.Module):
            def __init__(self, ntoken, ninp):
                super().__init__()
                self.rnn = nn.LSTM(ninp, ninp)

        class TransformerNet(nn.Transformer):
            def __init__(self, ntoken, ninp):
                super().__init__(d_model=ninp, nhead=2, num_encoder_layers=1)
    """,
    "main.py": """
        import torch
        from nets import RNNNet, TransformerNet
        model = CLASS(100, 32)
        optimizer = torch.optim.AdamW(model.parameters())
    """,
}


@pytest.mark.parametrize("cls,want", [("TransformerNet", "sdpa"), ("RNNNet", None)])
def test_the_attention_of_the_class_built_not_of_its_neighbours(tmp_path, cls, want):
    files = dict(TWO_MODELS, **{"main.py": TWO_MODELS["main.py"].replace("CLASS", cls)})
    plan = _job(tmp_path, files, paths=["main.py"])
    f = plan.fact("attention")
    assert f.value == want
    if want:
        # torch's transformer layers call scaled_dot_product_attention
        assert (f.origin, f.source.path, f.source.line) == (Origin.DERIVED, "nets.py", 9)


# objects about a model, and calls that wrap the model already loaded, are not the model
WRAPPED_SCRIPT = """
    import sys
    from unittest.mock import MagicMock
    from transformers import AutoModelForCausalLM
    from mylib.loading import ModelLoader, PeftPlugin, ShardPlugin, ModelDims

    model_loader = ModelLoader("cfg.yaml")
    model = AutoModelForCausalLM.from_pretrained(NAME)
    model = PeftPlugin("lora")(model, rank=8)
    model = ShardPlugin("fsdp").shard_model(model, bf16=True)
    model_dims = ModelDims(num_layers=32, hidden_size=4096)
    stub_model = MagicMock()
"""


def _wrapped(tmp_path, name):
    _job(tmp_path, {"train.py": WRAPPED_SCRIPT.replace("NAME", name)}, paths=["train.py"])
    r = preflight.check([str(tmp_path / "train.py")], cache=False)
    return r.jobs[0].job.plan, [(d.line, d.message) for j in r.jobs for d in j.diagnostics
                                if d.code == "PF004"]


def test_wrappers_loaders_dims_and_mocks_are_not_the_model(tmp_path):
    plan, pf004 = _wrapped(tmp_path, '"meta-llama/Llama-2-7b-hf"')
    assert plan.value("model") == "meta-llama/Llama-2-7b-hf"
    assert plan.value("params") == 6_738_415_616
    assert pf004 == []


def test_a_model_name_not_known_is_the_one_finding_not_its_wrappers(tmp_path):
    plan, pf004 = _wrapped(tmp_path, "sys.argv[1]")
    assert not plan.known("model") and not plan.known("params")
    assert pf004 == [(8, "cannot size the model: the model name is not known statically "
                         "(`sys.argv[1]` not known statically)")]


def test_a_class_of_its_own_assigned_to_the_model_is_still_the_model(tmp_path):
    # the negative of the rule: `model = Net(...)` is the model, and so is a wrapper's
    # result where the wrapped object is a different one (`model = Net(backbone)`)
    _job(tmp_path, {"train.py": """
        import torch
        from mylib.nets import Backbone, Net
        backbone = Backbone()
        model = Net(backbone)
        optimizer = torch.optim.AdamW(model.parameters())
    """}, paths=["train.py"])
    r = preflight.check([str(tmp_path / "train.py")], cache=False)
    assert [(d.line, d.message) for j in r.jobs for d in j.diagnostics if d.code == "PF004"] == \
        [(5, "cannot size Net: class Net is not defined in the analysed files")]


NET_MODULE = """
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self, width=64):
            super().__init__()
            self.fc1 = nn.Linear(width, 4 * width)
            self.fc2 = nn.Linear(4 * width, width)
"""

IMPORTING_SCRIPT = """
    import torch
    from IMPORT import Net

    model = Net(width=32)
    optimizer = torch.optim.AdamW(model.parameters())
"""


@pytest.mark.parametrize("layout,imp", [
    ("mypkg/net.py", "mypkg.net"),            # a package at the repository's root
    ("src/mypkg/net.py", "mypkg.net"),        # the src layout
    ("mypkg/__init__.py", "mypkg"),           # the package itself
])
def test_a_model_class_imported_from_a_package_of_the_repository(tmp_path, layout, imp):
    # the script is in scripts/, run from the root (`python -m scripts.train`): the import
    # names the file, which is neither beside the script nor one of the job's files
    (tmp_path / ".git").mkdir()
    files = {layout: NET_MODULE, "scripts/train.py": IMPORTING_SCRIPT.replace("IMPORT", imp)}
    plan = _job(tmp_path, files, paths=["scripts/train.py"])
    w = 32
    assert plan.value("params") == (w * 4 * w + 4 * w) + (4 * w * w + w)
    assert plan.fact("params").origin is Origin.DERIVED


def test_an_import_is_not_looked_for_above_the_repository(tmp_path):
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "net.py").write_text(textwrap.dedent(NET_MODULE))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    plan = _job(repo, {"scripts/train.py": IMPORTING_SCRIPT.replace("IMPORT", "mypkg.net")},
                paths=["scripts/train.py"])
    assert not plan.known("params")
    assert plan.fact("params").reason == "class Net is not defined in the analysed files"


BASE_MODULE = """
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.ff = nn.Linear(dim, 4 * dim)

    class BaseTransformer(nn.Module):
        def __init__(self, args):
            super().__init__()
            self.layers = nn.ModuleList([Block(args.dim) for _ in range(args.n_layers)])
"""

DERIVED_MODULE = """
    import torch.nn as nn
    from mylib.base import BaseTransformer

    class LMTransformer(BaseTransformer):
        def __init__(self, args):
            super().__init__(args)
            self.tok = nn.Embedding(args.vocab_size, args.dim)
"""

OMEGA_SCRIPT = """
    import torch
    from omegaconf import OmegaConf
    from apps.model import LMTransformer


    def main():
        cfg = OmegaConf.create({"model": {"dim": 32, "n_layers": 3, "vocab_size": VOCAB}})
        model = LMTransformer(cfg.model)
        optimizer = torch.optim.AdamW(model.parameters())
        model(torch.ones(1, 8, dtype=torch.long)).sum().backward()
        optimizer.step()


    if __name__ == "__main__":
        main()
"""


def test_a_base_class_of_another_module_builds_the_layers(tmp_path):
    # LMTransformer (apps/model.py) derives from mylib/base.py's BaseTransformer, whose
    # __init__ builds the blocks; the script passes a section of an OmegaConf config
    (tmp_path / ".git").mkdir()
    files = {"mylib/__init__.py": "", "mylib/base.py": BASE_MODULE,
             "apps/__init__.py": "", "apps/model.py": DERIVED_MODULE,
             "apps/train.py": OMEGA_SCRIPT.replace("VOCAB", "100")}
    plan = _job(tmp_path, files, paths=["apps/train.py"])
    d = 32
    assert plan.value("params") == 3 * (d * 4 * d + 4 * d) + 100 * d
    assert plan.value("layers") == 3


def test_a_vocabulary_set_later_from_the_tokenizer_is_not_counted_as_its_sentinel(tmp_path):
    (tmp_path / ".git").mkdir()
    files = {"mylib/__init__.py": "", "mylib/base.py": BASE_MODULE,
             "apps/__init__.py": "", "apps/model.py": DERIVED_MODULE,
             "apps/train.py": OMEGA_SCRIPT.replace("VOCAB", "-1")}
    plan = _job(tmp_path, files, paths=["apps/train.py"])
    assert not plan.known("params")
    assert "a size below zero" in plan.fact("params").reason


def test_a_class_given_a_loaded_tokenizer_is_said_unknown_not_an_internal_error(tmp_path):
    # `SentenceEmbedder(args.model_name_or_path, tokenizer)`: an argument that is an object
    # loaded from a name not known statically
    plan = _job(tmp_path, {"train.py": """
        import argparse
        import torch
        import torch.nn as nn
        from transformers import AutoModel, AutoTokenizer


        class SentenceEmbedder(nn.Module):
            def __init__(self, model_name, tokenizer):
                super().__init__()
                self.model = AutoModel.from_pretrained(model_name)


        parser = argparse.ArgumentParser()
        parser.add_argument("--model_name_or_path", type=str, required=True)
        args = parser.parse_args()
        tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
        model = SentenceEmbedder(args.model_name_or_path, tokenizer)
        optimizer = torch.optim.AdamW(model.parameters())
        optimizer.step()
    """}, paths=["train.py"])
    f = plan.fact("params")
    assert not f.known
    assert f.reason.startswith("cannot size SentenceEmbedder statically: line 11: "
                               "AutoModel.from_pretrained(model_name)")
