"""No confident guess: settings under undecided choices (py_patterns.alternatives) and the
repository's own optimizer classes (py_patterns.own_optimizers), read from small scripts."""

import ast
import textwrap

import pytest

from preflight.extract.py_patterns import own_optimizers
from preflight.extract.python import extract
from preflight.plan import merge

HEAD = "import torch\nfrom settings import load\ncfg = load()\n"


def plan(src, args=None):
    text = HEAD + textwrap.dedent(src)
    ext = extract("t.py", text, args or [])
    return merge(ext.facts)


def cls(src):
    return ast.parse(textwrap.dedent(src)).body[0]


# ------------------------------------------------------------------ undecided choices

def test_arms_that_agree_keep_the_value():
    f = plan("""
        if cfg.paged:
            opt = torch.optim.AdamW([], lr=1e-4)
        else:
            opt = torch.optim.AdamW([], lr=1e-5)
    """).facts["optimizer"]
    assert (f.value, f.origin.value) == ("adamw", "literal")


def test_arms_that_disagree_are_unknown_with_their_alternatives():
    f = plan("""
        if cfg.precision == "fp16":
            ctx = torch.autocast("cuda", dtype=torch.float16)
        else:
            ctx = torch.autocast("cuda", dtype=torch.bfloat16)
        torch.optim.AdamW([])
    """).facts["mixed_precision"]
    assert f.value is None and f.origin.value == "unknown"
    assert f.default == {"alternatives": ["fp16", "bf16"]}
    assert "'fp16' if `cfg.precision == \"fp16\"` is true (line 5)" in f.reason
    assert "'bf16' if `cfg.precision == \"fp16\"` is false (line 5)" in f.reason
    assert f.source.line == 8


def test_one_arm_of_a_setting_whose_absence_is_a_value():
    f = plan("""
        model = torch.nn.Linear(4, 4)
        if cfg.half:
            model = model.half()
        torch.optim.AdamW(model.parameters())
    """).facts["param_dtype"]
    assert f.value is None and f.default == {"alternatives": ["fp16", "fp32"]}


def test_the_last_word_outside_the_choice_is_what_runs():
    f = plan("""
        model = torch.nn.Linear(4, 4)
        if cfg.half:
            model = model.half()
        model = model.to(torch.bfloat16)
        torch.optim.AdamW(model.parameters())
    """).facts["param_dtype"]
    assert (f.value, f.origin.value, f.source.line) == ("bf16", "literal", 8)


def test_a_try_body_is_the_path_taken():
    f = plan("""
        try:
            import apex
            opt = torch.optim.AdamW([])
        except ImportError:
            opt = None
    """).facts["optimizer"]
    assert (f.value, f.origin.value) == ("adamw", "literal")


def test_a_comparison_with_a_run_time_object_is_undecided():
    f = plan("""
        dev = torch.empty(1).device
        if dev.type == "cpu":
            ctx = torch.autocast("cpu", dtype=torch.bfloat16)
        else:
            ctx = torch.autocast("cuda", dtype=torch.float16)
        torch.optim.AdamW([])
    """).facts["mixed_precision"]
    assert f.value is None and f.default == {"alternatives": ["bf16", "fp16"]}


# ------------------------------------------------------------------ optimizers

def test_zero_redundancy_optimizer_keeps_its_optimizer_class_state():
    f = plan("""
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer([], optimizer_class=torch.optim.AdamW, lr=1e-3)
    """).facts["optimizer"]
    assert (f.value, f.origin.value, f.source.line) == ("adamw", "literal", 6)


def test_a_vocabulary_class_from_an_unlisted_package():
    f = plan("""
        from muon import Muon
        opt = Muon([])
    """).facts["optimizer"]
    assert (f.value, f.origin.value) == ("other", "literal")


ADAM_LIKE = """
    class Mine(Optimizer):
        def step(self):
            for group in self.param_groups:
                for i, p in enumerate(group["params"]):
                    g = p.grad
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["m"] = torch.zeros_like(p)
                        state["v"] = torch.zeros_like(g)
                        if group["amsgrad"]:
                            state["vmax"] = torch.zeros_like(p)
"""


def test_state_tensors_per_parameter_are_counted_by_key():
    n, why = own_optimizers.state_count(cls(ADAM_LIKE))
    assert n == 2
    assert why.startswith("2 state tensors per parameter (m, v) in Mine (line 10)")
    assert "vmax too if `group['amsgrad']`" in why


def test_a_state_sized_like_a_projection_leaves_the_count_unknown():
    src = ADAM_LIKE.replace("g = p.grad", "g = project(p.grad)")
    n, why = own_optimizers.state_count(cls(src))
    assert n is None and "sized like `g`" in why


@pytest.mark.parametrize("src, is_opt", [
    ("class A(torch.optim.Optimizer):\n    pass", True),
    ("class A(AdamW):\n    pass", True),
    ("class NorMuonAndAdam:\n    def step(self): pass", True),
    ("class WarmupScheduler:\n    def step(self): pass", False),
    ("class AdamConfig(Optimizer):\n    pass", False),
    ("class Trainer:\n    def step(self): pass", False),
])
def test_what_is_an_optimizer_class(src, is_opt):
    assert own_optimizers.is_optimizer_class(cls(src)) is is_opt


@pytest.mark.parametrize("name, base", [("GaLoreAdamW8bit", "AdamW8bit"),
                                        ("ProjectedAdamW", "AdamW"), ("AdamW", None),
                                        ("AdamWConfig", None), ("Linear", None)])
def test_a_name_that_extends_a_known_optimizer(name, base):
    assert own_optimizers.named_like_optimizer(name) == base


def test_weights_cast_as_a_whole_without_autocast_are_pure_half_precision():
    p = plan("""
        model = torch.nn.Linear(4, 4)
        model = model.to(device="cuda", dtype=torch.bfloat16)
        opt = torch.optim.AdamW(model.parameters())
        opt.step()
    """)
    f = p.facts["mixed_precision"]
    assert (f.value, f.origin.value, f.source.line) == ("none", "default", 6)
    assert p.facts["param_dtype"].value == "bf16"
