"""`TrlParser(...).parse_args_and_config()` with `--config recipe.yaml`: the recipe is read
(its keys, then the command line's flags over them), and no finding says otherwise."""
import json
import textwrap

from tests.conftest import run_cli

SCRIPT = textwrap.dedent("""\
    from trl import DPOConfig, DPOTrainer, ModelConfig, ScriptArguments, TrlParser

    parser = TrlParser((ScriptArguments, DPOConfig, ModelConfig))
    script_args, training_args, model_args = parser.parse_args_and_config()
    trainer = DPOTrainer(model=model_args.model_name_or_path, args=training_args)
    trainer.train()
    """)
RECIPE = "model_name_or_path: Qwen/Qwen2-0.5B-Instruct\nper_device_train_batch_size: 2\nmax_length: 512\n"


def test_the_recipe_is_read_and_no_finding_says_it_is_not(tmp_path):
    (tmp_path / "dpo.py").write_text(SCRIPT)
    (tmp_path / "recipe.yaml").write_text(RECIPE)
    out = run_cli("check", "--format", "json", "--exit-zero", "--no-cache", "--",
                  "python", "dpo.py", "--config", "recipe.yaml", "--max_length", "1024",
                  cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    (job,) = json.loads(out.stdout)["jobs"]
    facts = job["facts"]
    assert (facts["model"]["value"], facts["model"]["source"]) == ("Qwen/Qwen2-0.5B-Instruct", "recipe.yaml:1:1")
    assert facts["micro_batch"]["value"] == 2
    assert facts["seq_len"]["value"] == 1024          # the flag over the recipe
    assert not any("not read" in d["message"] for d in job["diagnostics"])
