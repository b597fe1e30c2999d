"""LoRA trainable counts against peft, and the frozen-base byte formulas."""

import pytest

from preflight.models import catalog, formulas
from preflight.models.lora import base_weight_bytes, lora_counts


def test_lora_counts_of_the_corpus_cases():
    arch, cfg = catalog.lookup("NousResearch/Llama-2-7b-hf")
    shape = formulas.count(arch, cfg)
    # r=32 on every linear layer (QLoRA recipe), r=8 on q_proj/v_proj
    assert lora_counts(shape, {"r": 32, "targets": "all-linear"})["trainable_params"] == 79_953_920
    assert lora_counts(shape, {"r": 8, "targets": ["q_proj", "v_proj"]})["params"] == 6_742_609_920
    arch, cfg = catalog.lookup("Qwen/Qwen2-0.5B")
    # no target_modules: peft's default for qwen2 (q_proj, v_proj)
    out = lora_counts(formulas.count(arch, cfg), {"r": 32})
    assert (out["trainable_params"], out["params"]) == (2_162_688, 496_195_456)


def test_unmatched_target_is_reported():
    arch, cfg = catalog.lookup("gpt2")
    out = lora_counts(formulas.count(arch, cfg), {"r": 4, "targets": ["c_attn", "q_proj"]})
    assert out["trainable_params"] == 4 * (768 + 2304) * 12
    assert out["unknown"] == ["LoRA target 'q_proj' matches no linear layer of gpt2"]


def test_base_weight_bytes_4bit_constants():
    arch, cfg = catalog.lookup("meta-llama/Llama-2-7b-hf")
    shape = formulas.count(arch, cfg)
    q = sum(x.weight_params for x in shape.linears if x.in_block)
    rest = shape.params - q
    assert q == 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)
    b16, _ = base_weight_bytes(shape, 16)
    assert b16 == 2 * shape.params
    b4, formula = base_weight_bytes(shape, 4, double_quant=False)
    assert b4 == q // 2 + (q // 64) * 4 + 2 * rest
    b4dq, _ = base_weight_bytes(shape, 4)
    assert b4dq == q // 2 + q // 64 + -(-(q // 64) // 256) * 4 + 2 * rest
    b8, _ = base_weight_bytes(shape, 8)
    rows = 32 * (4 * 4096 + 2 * 11008 + 4096)
    assert b8 == q + 4 * rows + 2 * rest
    assert "nf4 weights" in formula




@pytest.mark.parametrize("arch,cfg,r,targets,save", [
    ("llama", {"hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
               "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000},
     8, ["q_proj", "v_proj"], []),
    ("llama", {"hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
               "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000},
     16, "all-linear", ["lm_head"]),
    ("qwen2", {"hidden_size": 128, "intermediate_size": 320, "num_hidden_layers": 3,
               "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512,
               "tie_word_embeddings": True}, 32, None, []),
    ("gpt2", {"n_embd": 128, "n_layer": 2, "n_head": 4, "vocab_size": 500}, 4,
     ["c_attn", "c_proj"], []),
    ("mistral", {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
                 "num_attention_heads": 4, "num_key_value_heads": 1, "vocab_size": 300},
     8, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], []),
])
def test_lora_trainable_matches_peft(arch, cfg, r, targets, save):
    torch = pytest.importorskip("torch", reason="torch==2.13.0 not installed (test extra)")
    transformers = pytest.importorskip("transformers", reason="transformers not installed")
    peft = pytest.importorskip("peft", reason="peft not installed: peft comparison skipped")
    import logging
    logging.getLogger("transformers").setLevel(logging.ERROR)
    shape = formulas.count(arch, cfg)
    ours = lora_counts(shape, {"r": r, "targets": targets, "modules_to_save": save})
    config = transformers.AutoConfig.for_model(arch, **cfg)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
        kw = {"target_modules": targets} if targets is not None else {}
        pm = peft.get_peft_model(model, peft.LoraConfig(r=r, lora_alpha=2 * r,
                                                        modules_to_save=save or None, **kw))
    trainable, total = pm.get_nb_trainable_parameters()
    assert (ours["trainable_params"], ours["params"]) == (trainable, total)


def test_frozen_base_bytes_from_the_lora_fact():
    from preflight.physics.lora import frozen_base_bytes
    from preflight.resolve.entry import resolve
    from preflight.plan import merge
    facts, _ = resolve([{"kind": "hub", "name": "Llama-2-7b-hf", "kwargs": {"load_in_4bit": True}},
                        {"kind": "lora", "r": 16, "targets": ["q_proj", "v_proj"]}],
                       search_dirs=[], project_models={}, params_override=None)
    lora = merge(facts).value("lora")
    arch, cfg = catalog.lookup("Llama-2-7b-hf")
    shape = formulas.count(arch, cfg)
    assert lora["base_params"] == shape.params
    assert frozen_base_bytes(lora) == base_weight_bytes(shape, 4)
    assert frozen_base_bytes({**lora, "base_bits": 8}) == base_weight_bytes(shape, 8)
    assert frozen_base_bytes({"r": 8}) is None
