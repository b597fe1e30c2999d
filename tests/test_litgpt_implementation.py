"""A litgpt job trains litgpt's own model: the `model_implementation` fact at its line, and
the activation tables of litgpt's implementation in the ledger (real CLI runs)."""

import json

from preflight.extract import extract_file
from preflight.physics.activations import Shape, Variant, layer_activation_bytes
from preflight.physics.litgpt_block import LITGPT, Layer
from preflight.physics.lora import frozen_base
from tests.conftest import run_cli

LORA_YAML = """\
checkpoint_dir: checkpoints/meta-llama/Llama-2-7b-hf
precision: bf16-true
devices: 1
lora_r: 8
lora_alpha: 16
lora_dropout: 0.05
lora_query: true
lora_value: true
train:
  global_batch_size: 8
  micro_batch_size: 2
  max_seq_length: 512
optimizer:
  class_path: torch.optim.AdamW
"""


def _layers(job: dict) -> dict:
    [line] = [ln for ln in job["ledger"]["lines"] if "layers' saved activations" in ln["label"]]
    return line


def test_litgpt_yaml_gives_the_implementation_at_its_model_line(tmp_path):
    (tmp_path / "lora.yaml").write_text(LORA_YAML, encoding="utf-8")
    e = extract_file(str(tmp_path / "lora.yaml"))
    [f] = [f for n, f in e.facts if n == "model_implementation"]
    assert (f.value, f.origin.value, f.source.line, f.source.col) == ("litgpt", "default", 1, 1)
    assert "litgpt's own GPT" in f.reason


def test_check_on_a_litgpt_lora_job_uses_litgpt_tables(tmp_path):
    """Llama-2-7B (MHA, h 4096, f 11008, 32 layers) in bf16, LoRA r 8 on q and v with
    dropout: the layers' line is 32 × litgpt's LoRA table (less layer 0's prefix) and its
    note names litgpt's own model."""
    (tmp_path / "lora.yaml").write_text(LORA_YAML, encoding="utf-8")
    r = run_cli("check", "lora.yaml", "--gpu", "H100", "--format", "json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)["jobs"][0]
    line = _layers(job)
    assert "litgpt's llama block" in line["label"]
    assert "the table of litgpt's own model" in line["note"]
    sh = Shape(s=512, b=2, h=4096, a=32, f=11008, k=32, d=2, r=8)
    la = layer_activation_bytes("llama", sh, variant=Variant(
        litgpt=Layer(block=LITGPT["llama"], lora_qkv=(True, False, True)),
        frozen=frozen_base("llama", ["q_proj", "v_proj"], dropout=True)))
    assert line["bytes"] == 32 * la.total - la.first_less


def _estimate(*extra: str) -> dict:
    r = run_cli("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--precision", "bf16",
                "--micro-batch", "1", "--seq-len", "512", "--format", "json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["jobs"][0]


def test_implementation_flag_switches_the_table_by_its_formula():
    """A full fine-tune of Llama-2-7B (MHA) in bf16, 512 tokens: litgpt's layer keeps per
    token 2·(4 − 2)·h more in its two norms' fp32 normalised tensors, proj's re-laid-out
    input (2·h) and V's whole fused qkv output (2 × 2·h), and its two norms' fp32 weight
    copies (2 × 4·h per layer)."""
    tf, lit = _layers(_estimate()), _layers(_estimate("--implementation", "litgpt"))
    h, tokens = 4096, 512
    assert lit["bytes"] - tf["bytes"] == 32 * (tokens * h * (4 + 2 + 4) + 8 * h)
    assert "the table of litgpt's own model" in lit["note"]
    assert "litgpt" not in tf.get("note", "")


def test_an_architecture_without_a_litgpt_table_says_so():
    r = run_cli("estimate", "--model", "Qwen/Qwen2.5-7B", "--precision", "bf16",
                "--micro-batch", "1", "--seq-len", "512", "--format", "json",
                "--implementation", "litgpt")
    assert r.returncode == 0, r.stderr
    note = _layers(json.loads(r.stdout)["jobs"][0])["note"]
    assert "its qwen2 block has no table of its own: the transformers table stands in" in note
    # Falcon has neither a litgpt table nor a transformers one: its layers are unknown
    r = run_cli("estimate", "--model", "tiiuae/falcon-7b", "--precision", "bf16",
                "--micro-batch", "1", "--seq-len", "512", "--format", "json",
                "--implementation", "litgpt")
    job = json.loads(r.stdout)["jobs"][0]
    [line] = [ln for ln in job["ledger"]["lines"]
              if ln["label"] == "transformer layers (saved activations)"]
    assert line["bytes"] is None and "family" in job["ledger"]["unknown"]


def test_implementation_flag_is_validated():
    r = run_cli("estimate", "--params", "7e9", "--implementation", "nanogpt")
    assert r.returncode != 0
    assert "--implementation" in r.stderr and "litgpt" in r.stderr
