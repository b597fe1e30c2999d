"""The peak by phase, half precision without masters, LoRA from flags: real CLI runs and
counts from peft / transformers on the meta device."""

import json
import os
import textwrap

from tests.conftest import run_cli


def _job(*args):
    r = run_cli(*args, "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)["jobs"][0]


def test_peak_is_the_largest_phase_not_the_sum_of_lines():
    j = _job("estimate", "--model", "gpt2", "--optimizer", "adamw", "--precision", "fp32",
             "--micro-batch", "4", "--seq-len", "512", "--gpu", "H100")
    led = j["ledger"]
    phases = led["phases"]
    assert list(phases) == ["forward", "loss backward", "layer backward", "backward end",
                            "optimizer step"]
    assert led["peak_phase"] == max(phases, key=phases.get)
    assert led["tiers"]["tensors"] == max(phases.values())
    lines = {ln["label"]: ln for ln in led["lines"]}
    slack = next(v for k, v in lines.items() if k.startswith("allocator segment slack"))
    cublas = next(v for k, v in lines.items() if k.startswith("cuBLAS workspaces"))
    ctx = next(v for k, v in lines.items() if k.startswith("CUDA context"))
    assert led["tiers"]["reserved"] == led["tiers"]["tensors"] + slack["bytes"] + cublas["bytes"]
    assert led["tiers"]["process"] == led["tiers"]["reserved"] + ctx["bytes"]
    assert led["peak_bytes"] == led["tiers"]["process"]
    every_line = sum(ln["bytes"] for ln in led["lines"] if not ln["margin"])
    assert led["peak_bytes"] < every_line
    # the transient logit gradients and the optimizer's temporaries are never alive together
    assert phases["optimizer step"] < phases["loss backward"]
    assert any("sets gradients to None" in b for b in led["behaviour"])


def test_accumulation_keeps_gradients_through_the_forward():
    base = ("estimate", "--model", "gpt2", "--optimizer", "adamw", "--precision", "fp32",
            "--micro-batch", "4", "--seq-len", "512")
    one, four = _job(*base), _job(*base, "--grad-accum", "4")
    grads = one["ledger"]["per_gpu_bytes"]["grads"]
    assert four["ledger"]["phases"]["forward"] == one["ledger"]["phases"]["forward"] + grads
    assert any("accumulation over 4" in b for b in four["ledger"]["behaviour"])


def test_flags_that_contradict_the_model_are_one_line_errors():
    r = run_cli("estimate", "--model", "gpt2", "--params", "5.5e6")
    assert r.returncode != 0 and "contradicts --model gpt2" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    # shape flags override the model's config consistently: the count follows the shape
    j = _job("estimate", "--model", "gpt2", "--layers", "2", "--hidden", "128",
             "--heads", "4", "--vocab", "1000")
    from transformers import GPT2Config, GPT2LMHeadModel
    import torch
    with torch.device("meta"):
        m = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000))
    assert j["facts"]["params"]["value"] == sum(p.numel() for p in m.parameters())


def test_mistral_qlora_adapter_count_equals_peft():
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import MistralConfig, MistralForCausalLM

    j = _job("estimate", "--model", "mistralai/Mistral-7B-v0.1", "--lora-r", "16",
             "--lora-base-bits", "4", "--lora-targets", "q_proj,k_proj,v_proj,o_proj",
             "--optimizer", "adamw", "--micro-batch", "1", "--seq-len", "512")
    cfg = MistralConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                        num_attention_heads=32, num_key_value_heads=8, vocab_size=32000)
    with torch.device("meta"):
        m = get_peft_model(MistralForCausalLM(cfg), LoraConfig(
            r=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    trainable = sum(p.numel() for p in m.parameters() if p.requires_grad)
    assert j["facts"]["trainable_params"]["value"] == trainable
    labels = [ln["label"] for ln in j["ledger"]["lines"] if ln["key"] == "params"]
    assert labels[0] == "LoRA adapter weights (fp32)"
    assert labels[1].startswith("frozen base weights (4-bit linear layers")


NEWCOMER = textwrap.dedent("""\
    import torch
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)
    args = TrainingArguments(output_dir="out", bf16=True, optim="adamw_torch",
                             per_device_train_batch_size=4)
    trainer = Trainer(model=model, args=args, train_dataset=train_dataset)
    trainer.train()
""")


def test_newcomer_bf16_weights_with_trainer_bf16_have_no_master(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(NEWCOMER)
    r = run_cli("check", "--format", "json", "--gpu", "H100", str(path))
    job = json.loads(r.stdout)["jobs"][0]
    n = job["facts"]["params"]["value"]
    b = job["ledger"]["per_gpu_bytes"]
    assert (b["params"], b["grads"], b["master"]) == (2 * n, 2 * n, 0)
    opt = [ln for ln in job["ledger"]["lines"] if ln["key"] == "optimizer"
           and ln["lifetime"] != "step"]
    assert opt[0]["bytes"] == 4 * n               # AdamW m, v in bf16: 8 B/param in all
    assert not any(ln["key"] == "master" for ln in job["ledger"]["lines"])
    assert "PF201" in {d["code"] for d in job["diagnostics"]}
    assert os.path.basename(str(path)) in job["entry"]


def _saved_layers(job):
    return next(ln for ln in job["ledger"]["lines"] if "layers' saved activations" in ln["label"])


def test_dropout_flag_says_the_masks_away():
    base = ("estimate", "--model", "gpt2", "--optimizer", "adamw", "--precision", "bf16",
            "--micro-batch", "1", "--seq-len", "128")
    kept, none = _job(*base), _job(*base, "--dropout", "0")
    # sdpa: two 1-byte masks of width h per layer (CUDA's bool masks), 12 layers
    assert _saved_layers(kept)["bytes"] - _saved_layers(none)["bytes"] == 12 * 2 * 768 * 128
    assert _job(*base, "--dropout", "0.1")["ledger"]["phases"] == kept["ledger"]["phases"]
    r = run_cli(*base, "--dropout", "1.5")
    assert r.returncode != 0
    assert r.stderr.strip() == "Error: --dropout: dropout = 1.5 is not a probability in [0, 1)"


def test_cpu_autocast_keeps_gelu_new_in_16_bits(tmp_path):
    base = ("estimate", "--model", "gpt2", "--optimizer", "adamw", "--precision",
            "bf16-autocast", "--micro-batch", "1", "--seq-len", "128", "--dropout", "0")
    cuda, cpu = _job(*base), _job(*base, "--autocast-device", "cpu")
    # CUDA autocast runs pow in fp32: pow saves the fp32 copy of the GELU input, and
    # gelu_new's tanh and 1 + tanh are fp32; on the CPU all three stay bf16: 3 f-wide
    # tensors × 2 B less per token per layer (f = 3,072)
    assert _saved_layers(cuda)["bytes"] - _saved_layers(cpu)["bytes"] == 12 * 128 * 3 * 3072 * 2
    assert "CPU autocast" in _saved_layers(cpu)["note"]
    # a script that autocasts on the CPU says the same
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel
        model = GPT2LMHeadModel(GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
        optimizer = torch.optim.AdamW(model.parameters())
        batch_size = 1
        block_size = 128
        for step in range(10):
            x = torch.randint(0, 50257, (batch_size, block_size))
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(input_ids=x, labels=x).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        """))
    j = _job("estimate", str(script))
    assert _saved_layers(j)["bytes"] == _saved_layers(cpu)["bytes"]
    assert "CPU autocast" in _saved_layers(j)["note"]
    r = run_cli(*base, "--autocast-device", "tpu")
    assert r.returncode != 0 and "--autocast-device" in r.stderr
