"""Resolve the model references a job makes into exact size facts, offline.

A hub name resolves, in order, from: a local directory holding `config.json` (the name as a
path, or under one of `search_dirs`); the Hugging Face cache (`$HF_HUB_CACHE`,
`$HF_HOME/hub`, `~/.cache/huggingface/hub`: `models--org--name/snapshots/*/config.json`),
never the network; the offline catalogue; the project's `[tool.preflight.models]` table
(name → parameter count, or a table of config.json fields); `--params`. Otherwise the
size stays unknown and a PF004 finding at the reference says how to supply it.

Config objects (`LlamaConfig(...)`), `AutoConfig.from_pretrained(name, **overrides)` and
custom `nn.Module` classes (counted by `modules.count_modules`) resolve the same way.
LoRA / quantisation references turn into `trainable_params` and the `lora` fact.

This stage sits above the extractors: it reads files (config.json, adapter configs,
torchtitan's flavor tables, the Python files beside a script) and the analysed scripts
themselves, and turns what `models` knows into facts. Its modules: `entry` (`resolve`,
`facts_for_name`), `names` (hub names), `locations` (where configs are found), `shapes`
(a config counted), `classes` (custom modules and their scripts), `registries` (torchtitan,
Megatron-LM, GPT-NeoX), `named_configs` (`Config.from_name(name)` from a registry of the
repository), `model_attention` (the attention kernel a model class's code calls),
`documented` (a placeholder model argument read from the documentation of its command),
`model_facts` (the facts it emits beside the count) and `values` (the extractor's values
read, and one resolved reference).
"""
