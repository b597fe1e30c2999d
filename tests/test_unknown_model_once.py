"""A model the job names (on the command line, in a config) but that cannot be sized gets
one PF004 at the line that names it — not a second one at the script's load, whose argument
passes through a helper the reader cannot follow, nor one per line that loads it again."""
import json
import textwrap

from tests.conftest import run_cli

SCRIPT = textwrap.dedent("""\
    from dataclasses import dataclass, field
    from transformers import AutoConfig, AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
    from somewhere_else import fetch_checkpoint


    @dataclass
    class ModelArguments:
        model_name_or_path: str = field(default=None)


    model_args, args = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
    config = AutoConfig.from_pretrained(model_args.model_name_or_path)
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, config=config)
    model = AutoModelForCausalLM.from_pretrained(fetch_checkpoint(model_args.model_name_or_path))
    Trainer(model=model, args=args).train()
    """)


def test_a_named_model_that_cannot_be_sized_is_one_finding_at_its_name(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "run.sh").write_text(
        "torchrun --nproc_per_node 2 train.py --model_name_or_path my-org/unlisted-7b --output_dir o\n")
    out = run_cli("check", "run.sh", "--format", "json", "--exit-zero", "--no-cache", cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    (job,) = json.loads(out.stdout)["jobs"]
    pf004 = [(d["path"], d["line"], d["message"]) for d in job["diagnostics"] if d["code"] == "PF004"]
    # the config read first names it: the one finding is there
    assert [(p, n) for p, n, _ in pf004] == [("train.py", 12)]
    assert pf004[0][2].startswith("cannot size my-org/unlisted-7b:")
    params = job["facts"]["params"]
    assert params["value"] is None and "my-org/unlisted-7b" in params["reason"]
