"""Custom nn.Module classes counted statically, then checked against torch itself."""

import importlib.util
import os
import sys

import libcst as cst
import pytest

from preflight.models.modules import count_modules, module_classes

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "models")

# (file, class, config fields or None, positional args, keyword args)
CASES = [
    ("tiny_gpt.py", "GPT", {}, None, None),
    ("tiny_gpt.py", "GPT", {"n_layer": 5, "n_embd": 96, "n_head": 6, "bias": False,
                            "vocab_size": 4321}, None, None),
    ("tiny_resnet.py", "ResNet", None, None, None),
    ("tiny_resnet.py", "ResNet", None, ["Bottleneck", [1, 2, 1, 1]], {"num_classes": 7}),
    ("tiny_mlp.py", "MLP", None, None, None),
    ("tiny_mlp.py", "MLP", None, [[32, 16, 3]], None),
    ("tiny_mlp.py", "Tagger", None, None, None),
    ("tiny_mlp.py", "WordLM", None, [3000, 200, 2, 200, 2], None),
]


def _parse(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as f:
        return cst.parse_module(f.read())


@pytest.mark.parametrize("fname,cls,config,args,kwargs", CASES)
def test_static_count_is_known(fname, cls, config, args, kwargs):
    n, pieces = count_modules(_parse(fname), cls, config, args=args, kwargs=kwargs)
    assert isinstance(n, int) and n > 0
    assert pieces == []


def test_module_classes_lists_nn_modules_only():
    assert module_classes(_parse("tiny_gpt.py")) == [
        "LayerNorm", "SelfAttention", "FeedForward", "Block", "GPT"]


def test_unknown_piece_is_reported_with_its_line():
    src = ("import torch.nn as nn\n"
           "class Net(nn.Module):\n"
           "    def __init__(self, config):\n"
           "        super().__init__()\n"
           "        self.a = nn.Linear(config.d, 10)\n"
           "        self.b = nn.Conv2d(3, 8, 3)\n"
           "        self.c = SomethingElse(4)\n")
    n, pieces = count_modules(cst.parse_module(src), "Net", {})
    assert n is None
    assert pieces == ["line 5: nn.Linear with unknown in_features (config.d is not known): "
                      "nn.Linear(config.d, 10)",
                      "line 7: SomethingElse(4) is not sized (SomethingElse is not defined "
                      "in this file)"]
    n, pieces = count_modules(cst.parse_module(src.replace("SomethingElse(4)", "nn.ReLU()")),
                              "Net", {"d": 4})
    assert (n, pieces) == (4 * 10 + 10 + 3 * 8 * 9 + 8, [])


def test_unmodelled_layer_is_not_dropped():
    src = ("from torch import nn\n"
           "class Net(nn.Module):\n"
           "    def __init__(self):\n"
           "        super().__init__()\n"
           "        self.a = nn.Linear(4, 4)\n"
           "        self.b = nn.Hardtanh2000(4)\n")
    n, pieces = count_modules(cst.parse_module(src), "Net", None)
    assert n is None
    assert pieces == ["line 6: nn.Hardtanh2000 is not modelled: nn.Hardtanh2000(4)"]


def test_bad_input_gives_pieces_not_tracebacks():
    src = ("import torch.nn as nn\n"
           "class Net(nn.Module):\n"
           "    def __init__(self, n):\n"
           "        super().__init__()\n"
           "        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(n)])\n")
    n, pieces = count_modules(cst.parse_module(src), "Net", None)
    assert n is None and len(pieces) == 1 and pieces[0].startswith("line 5: ModuleList")
    assert count_modules(cst.parse_module(src), "Missing", None) == (
        None, ["class 'Missing' is not defined in this file"])
    assert count_modules(cst.parse_module(src), "Net", {"n": 3}) == (3 * 72, [])




def _import(name):
    spec = importlib.util.spec_from_file_location(f"_pf_fixture_{name[:-3]}",
                                                  os.path.join(FIX, name))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("fname,cls,config,args,kwargs", CASES)
def test_static_count_equals_torch(fname, cls, config, args, kwargs):
    pytest.importorskip("torch", reason="torch==2.13.0 not installed (test extra)")
    ours, pieces = count_modules(_parse(fname), cls, config, args=args, kwargs=kwargs)
    mod = _import(fname)
    real_args = [getattr(mod, a) if isinstance(a, str) else a for a in (args or [])]
    if config is not None:
        model = getattr(mod, cls)(mod.GPTConfig(**config))
    else:
        model = getattr(mod, cls)(*real_args, **(kwargs or {}))
    assert ours == sum(p.numel() for p in model.parameters())


def test_factory_with_transformers_encoder_and_tied_head():
    from preflight.models import formulas
    from preflight.models.modules import count_expression
    n, pieces = count_expression(_parse("roberta_mlm.py"), "build()")
    base = formulas.count("roberta", dict(
        vocab_size=50265, num_hidden_layers=6, hidden_size=256, num_attention_heads=8,
        intermediate_size=512, max_position_embeddings=514, type_vocab_size=1), head="base")
    # encoder (with pooler) + dense + LayerNorm + output bias; decoder weight tied
    assert (n, pieces) == (base.params + 256 * 256 + 256 + 2 * 256 + 50265, [])
    assert n == 16_345_177
    n, pieces = count_expression(_parse("tiny_resnet.py"), "ResNet(Bottleneck, [1, 1, 1, 1])")
    assert isinstance(n, int) and pieces == []
    assert count_expression(_parse("tiny_resnet.py"), "Nope()")[0] is None


def test_a_negative_size_sentinel_is_not_counted():
    # `vocab_size: int = -1`, set from the tokenizer before the model is built: torch would
    # refuse nn.Embedding(-1, 64), so the count is not known (never 64 · -1 parameters)
    src = (
        "import torch.nn as nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        self.tok = nn.Embedding(config.vocab_size, 64)\n"
        "        self.out = nn.Linear(64, 64)\n")
    n, pieces = count_modules(src, "Net", {"vocab_size": -1})
    assert n is None
    assert pieces == ["line 5: nn.Embedding with num_embeddings=-1 (a size below zero: set "
                      "elsewhere before the model is built): nn.Embedding(config.vocab_size, 64)"]
