"""The static evaluator: constants, arithmetic, formatting, argparse, dataclasses, env."""
import textwrap

from preflight.extract.python import extract
from preflight.noqa import noqa_lines
from preflight.plan import merge

HEAD = "import torch\nfrom torch.utils.data import DataLoader\n"


def facts(src, args=None):
    text = HEAD + textwrap.dedent(src)
    ext = extract("t.py", text, args)
    return ext, merge(ext.facts)


def fact(src, name, args=None):
    ext, plan = facts(src, args)
    return plan.facts[name]


def mb(src, args=None):
    f = fact(src, "micro_batch", args)
    return f.value, f.origin.value, f.source.line if f.source else None


def test_arithmetic_and_names():
    assert mb("a = 3\nb = a * 4 + 2\nDataLoader(x, batch_size=b // 2)\n") == (7, "literal", 5)
    assert mb("DataLoader(x, batch_size=2 ** 5)\n") == (32, "literal", 3)
    assert mb("n = max(4, 8)\nDataLoader(x, batch_size=n)\n") == (8, "literal", 3)
    assert mb("d = {'bs': [1, 2, 16]}\nDataLoader(x, batch_size=d['bs'][-1])\n")[0] == 16


def test_string_formatting():
    ext, plan = facts("""
        size = 7
        a = f"org/m-{size}b"
        b = "org/m-{}b".format(size)
        c = "org/m-%db" % size
        d = "-".join(["x", "y"])
        torch.optim.AdamW([])
    """)
    names = ext.extras["names"]
    assert names["a"] == names["b"] == names["c"] == "org/m-7b"
    assert names["d"] == "x-y"


def test_argparse_forms():
    src = """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--batch-size", "-b", type=int, default=8)
        p.add_argument("--amp", action="store_true")
        args = p.parse_args()
        DataLoader(x, batch_size=args.batch_size)
        if args.amp:
            torch.optim.SGD([], lr=1)
        else:
            torch.optim.AdamW([])
    """
    assert mb(src) == (8, "default", 6)
    assert mb(src, ["--batch-size", "4"]) == (4, "cli", 6)
    assert mb(src, ["--batch-size=5"]) == (5, "cli", 6)
    assert mb(src, ["-b", "6"]) == (6, "cli", 6)
    # argparse does not accept --batch_size for --batch-size: not applied, and said so
    ext, plan = facts(src, ["--batch_size", "3"])
    assert plan.value("micro_batch") == 8 and ext.extras["unused_args"] == ["batch_size"]
    assert fact(src, "optimizer").value == "adamw"
    assert fact(src, "optimizer", ["--amp"]).value == "sgd"
    r = fact(src, "micro_batch", ["--batch-size", "four"])
    assert not r.known and "four" in r.reason


def test_hf_bool_flags_and_dataclass_defaults():
    src = """
        from dataclasses import dataclass, field
        from transformers import HfArgumentParser, TrainingArguments

        @dataclass
        class Extra:
            max_seq_length: int = field(default=1024)

        parser = HfArgumentParser((Extra, TrainingArguments))
        extra, targs = parser.parse_args_into_dataclasses()
        DataLoader(x, batch_size=targs.per_device_train_batch_size)
    """
    ext, plan = facts(src, ["--bf16", "True", "--per_device_train_batch_size=3",
                            "--gradient_checkpointing", "--max_seq_length", "2048"])
    assert (plan.value("mixed_precision"), plan.facts["mixed_precision"].origin.value) == ("bf16", "cli")
    assert plan.value("activation_checkpointing") == "full"
    assert plan.facts["micro_batch"].value == 3          
    assert plan.facts["micro_batch"].origin.value == "cli"
    ext, plan = facts(src, ["--bf16", "False"])
    assert plan.value("mixed_precision") == "none"
    assert plan.facts["micro_batch"].value == 8 and plan.facts["micro_batch"].origin.value == "default"


def test_environment_is_unknown_with_default():
    f = fact("import os\nDataLoader(x, batch_size=int(os.environ.get('BS', '4')))\n", "micro_batch")
    assert not f.known and f.default == 4 and "BS" in f.reason
    f = fact("import os\nDataLoader(x, batch_size=int(os.getenv('BS', 2)))\n", "micro_batch")
    assert not f.known and f.default == 2
    f = fact("import os\nDataLoader(x, batch_size=int(os.environ['BS']))\n", "micro_batch")
    assert not f.known and "BS" in f.reason


def test_runtime_condition_joins_both_branches():
    src = """
        if torch.cuda.device_count() > 4:
            bs = 8
        else:
            bs = 16
        DataLoader(x, batch_size=bs)
    """
    f = fact(src, "micro_batch")
    assert not f.known
    assert f.default == {"if_true": 8, "if_false": 16}


def test_functions_are_inlined_with_their_arguments():
    src = """
        def make(cfg, scale=2):
            return DataLoader(x, batch_size=cfg["bs"] * scale)

        def main():
            make({"bs": 5})

        main()
    """
    assert mb(src)[:2] == (10, "derived")


def test_recursion_and_loops_terminate():
    src = """
        def f(n):
            return f(n - 1) if n else 0
        def g():
            return h()
        def h():
            return g()
        f(10)
        g()
        while True:
            x = 1
        torch.optim.Adam([])
    """
    ext, plan = facts(src)
    assert plan.value("optimizer") == "adam"


def test_noqa_comments():
    text = "x = 1  # noqa: PF101, PF102\ny = 2  # noqa\nz = 3  # NOQA:pf3\n"
    assert noqa_lines(text) == {1: ["PF101", "PF102"], 2: [], 3: ["PF3"]}


def test_syntax_error_is_located():
    ext = extract("bad.py", "import torch\n\ndef f(:\n    pass\n")
    assert [(d.code, d.line) for d in ext.diagnostics] == [("PF002", 3)]
    assert ext.diagnostics[0].col >= 1 and ext.facts == []


def test_files_without_training_api_are_skipped():
    ext = extract("util.py", "def add(a, b):\n    return a + b\n")
    assert ext.facts == [] and ext.extras.get("skipped")
    assert "module" not in ext.extras


def test_empty_and_pathological_inputs_never_raise():
    for text in ("", "\n\n", "# torch\n", "torch" + "(" * 300 + ")" * 300 + "\n",
                 "import torch\nx = " + " + ".join(["1"] * 3000) + "\n",
                 "import torch\nx = 'a' * 10**9\n", "import torch\nx = 10 ** 10 ** 10\n",
                 "import torch\nbatch_size = [" * 200 + "]" * 200 + "\n"):
        ext = extract("p.py", text)
        assert ext.path == "p.py"


def test_unicode_columns_count_characters():
    text = "import torch\nnom_modèle = 'é'; opt = torch.optim.AdamW([])\n"
    ext = extract("u.py", text)
    f = merge(ext.facts).facts["optimizer"]
    assert (f.source.line, f.source.col) == (2, text.splitlines()[1].index("torch.optim") + 1)


def test_large_script_is_analysed():
    text = "import torch\nbatch_size = 4\n" + "x = 1  # " + "p" * 600_000 + "\n"
    ext = extract("large.py", text)
    assert merge(ext.facts).value("micro_batch") == 4
    assert ext.diagnostics == []


def test_syntax_newer_than_the_running_python_is_not_a_syntax_error():
    import sys
    text = "import torch\ntype Alias = list[int]\n"
    ext = extract("new.py", text)
    if sys.version_info >= (3, 12):
        assert not [d for d in ext.diagnostics if d.code == "PF002"]
    else:
        assert [(d.code, d.line) for d in ext.diagnostics] == [("PF003", 2)]


def test_argparse_type_bool_behaves_like_argparse():
    src = """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--ckpt", type=bool, default=False)
        args = p.parse_args()
        if args.ckpt:
            model.gradient_checkpointing_enable()
        torch.optim.AdamW([])
    """
    assert fact(src, "activation_checkpointing", ["--ckpt", "False"]).value == "full"
    # not given: the only call that turns it on sits in the arm the launch does not take
    ext, plan = facts(src, [])
    f = plan.facts["activation_checkpointing"]
    assert (f.value, f.origin.value, f.source.line) == ("none", "default", 9)
    assert "`args.ckpt` is false (line 8)" in f.reason


def test_the_first_model_loaded_is_the_trained_one():
    src = """
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("org/policy", torch_dtype=torch.bfloat16)
        ref = AutoModelForCausalLM.from_pretrained("org/reference", torch_dtype=torch.float16)
    """
    ext, plan = facts(src)
    assert (plan.value("model"), plan.value("param_dtype")) == ("org/policy", "bf16")
    hubs = [(r["name"], r.get("role")) for r in ext.extras["model_refs"] if r["kind"] == "hub"]
    assert hubs == [("org/policy", None), ("org/reference", "secondary")]


def test_trainer_batch_wins_over_a_side_dataloader():
    src = """
        from transformers import TrainingArguments
        args = TrainingArguments(output_dir="o", per_device_train_batch_size=2)
        calib = DataLoader(data, batch_size=64)
    """
    ext, plan = facts(src)
    assert (plan.value("micro_batch"), plan.facts["micro_batch"].source.line) == (2, 5)


def test_helpers_never_called_add_their_settings_but_not_their_parameter_unknowns():
    src = """
        def make_loader(ds, bs):
            return DataLoader(ds, batch_size=bs)

        def make_opt(model):
            return torch.optim.AdamW(model.parameters())
    """
    ext, plan = facts(src)
    assert plan.value("optimizer") == "adamw"
    assert "micro_batch" not in plan.facts
    assert not [d for d in ext.diagnostics if d.code == "PF003"]


def test_the_evaluator_carries_its_own_source_lines():
    """Re-entrant: evaluating one file while another is being read loses nothing."""
    import ast

    from preflight.lang import python as E

    a_text = "bs = int(os.environ['BS'])\n"
    tree = ast.parse(a_text)
    ev = E.Evaluator("a.py", tree, [], None, lines=a_text.splitlines())
    extract("b.py", "import torch\nx = torch.zeros(3)\n")     # another file in between
    assert ev.src(tree.body[0].value) == "int(os.environ['BS'])"
    assert not hasattr(E, "_LINES")


def test_lightning_style_accumulation_iters_is_the_accumulation():
    # lit-llama / lit-gpt scripts keep the accumulation in `gradient_accumulation_iters`
    ext, plan = facts("batch_size = 128\nmicro_batch_size = 4\n"
                      "gradient_accumulation_iters = batch_size // micro_batch_size\n")
    f = plan.facts["grad_accum"]
    assert (f.value, f.origin.value, f.source.line) == (32, "literal", 5)


def test_a_config_dict_that_holds_itself_is_composed_within_its_budget():
    # OmegaConf.merge / structured / EasyDict over a dict that contains itself: cut at the
    # nesting budget, the script's other facts still read
    ext, plan = facts("""
        from omegaconf import OmegaConf
        from easydict import EasyDict
        cfg = {"train": {"bs": 4}}
        cfg["train"]["self"] = cfg
        x = OmegaConf.to_object(OmegaConf.merge(cfg, cfg, OmegaConf.structured(cfg)))
        e = EasyDict(cfg)
        DataLoader(x, batch_size=e.train.self.train.bs)
    """)
    assert plan.facts["micro_batch"].value == 4
