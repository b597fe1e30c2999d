"""Resolve the model references a job makes into exact size facts, offline by default.

A hub name resolves, in order, from: the project's `[tool.preflight.models]` table (name →
parameter count, or a table of config.json fields); a local directory (the name as a path,
or under one of `search_dirs`) or the Hugging Face cache (`$HF_HUB_CACHE`, `$HF_HOME/hub`,
`~/.cache/huggingface/hub`: `models--org--name/snapshots/*/`) holding `config.json`, the
safetensors headers of its checkpoint (exact shapes, for an architecture without a
formula), or a saved adapter's `adapter_config.json` (→ its base model); a fine-tune's
`_name_or_path` when its config cannot be counted; the offline catalogue; and only when
the user allows the network (`hub`), the Hugging Face hub. `--params` replaces the count.
Otherwise the size stays unknown and a PF004 finding at the reference says how to supply
it.

Config objects (`LlamaConfig(...)`), `AutoConfig.from_pretrained(name, **overrides)` and
custom `nn.Module` classes (counted by `modules.count_modules`) resolve the same way.
LoRA / quantisation references turn into `trainable_params` and the `lora` fact.

This stage sits above the extractors: it reads files (config.json, adapter configs,
torchtitan's flavor tables, the Python files beside a script) and the analysed scripts
themselves, and turns what `models` knows into facts. Its modules: `entry` (`resolve`,
`facts_for_name`), `names` (hub names), `locations` (where configs are found),
`checkpoints` (safetensors headers and what they count), `hub` (the Hugging Face hub,
through huggingface_hub, only when allowed), `shapes`
(a config counted), `classes` (custom modules and their scripts), `registries` (torchtitan,
Megatron-LM, GPT-NeoX), `named_configs` (`Config.from_name(name)` from a registry of the
repository), `model_attention` (the attention kernel a model class's code calls),
`documented` (a placeholder model argument read from the documentation of its command),
`model_facts` (the facts it emits beside the count) and `values` (the extractor's values
read, and one resolved reference).
"""
