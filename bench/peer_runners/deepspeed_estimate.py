"""Runs inside the DeepSpeed peer environment (never the project's): DeepSpeed's
`estimate_zero{2,3}_model_states_mem_needs_all_cold`, which print a table of per-CPU and
per-GPU memory for each offload option.

Their inputs are the model's total and largest-layer parameter counts. These are counted
on the model transformers builds from the row's config.json on the meta device, the way
DeepSpeed's own `model_to_params` counts a live model (every parameter once; the largest
module's own parameters) — `_all_live` itself cannot be used there: it dedups shared
weights by `data_ptr()`, which is 0 for every meta tensor.

    python deepspeed_estimate.py CONFIG_DIR STAGE GPUS_PER_NODE NODES
    python deepspeed_estimate.py --jobs JOBS_JSON   # [[marker, CONFIG_DIR, STAGE, PER_NODE, NODES], …]

With --jobs, each job's table follows a line `=== <marker>` (one process for many rows).
"""

import json
import sys

import torch
import transformers
from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs_all_cold
from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs_all_cold
from transformers import AutoConfig


def run(model_dir, stage, per_node, nodes):
    config = AutoConfig.from_pretrained(model_dir)
    builder = transformers.AutoModelForCausalLM
    if type(config) not in transformers.MODEL_FOR_CAUSAL_LM_MAPPING:
        builder = (transformers.AutoModelForSeq2SeqLM
                   if type(config) in transformers.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING
                   else transformers.AutoModel)
    with torch.device("meta"):
        model = builder.from_config(config, dtype=torch.float32)
    total = sum(p.numel() for p in model.parameters())
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())
    print(f"model: {type(model).__name__}, total_params={total}, largest_layer_params={largest}")
    if int(stage) == 3:
        estimate_zero3_model_states_mem_needs_all_cold(
            total_params=total, largest_layer_params=largest, num_gpus_per_node=int(per_node),
            num_nodes=int(nodes))
    else:
        estimate_zero2_model_states_mem_needs_all_cold(
            total_params=total, num_gpus_per_node=int(per_node), num_nodes=int(nodes))


if sys.argv[1] == "--jobs":
    for marker, *job in json.load(open(sys.argv[2])):
        print(f"=== {marker}", flush=True)
        try:
            run(*job)
        except Exception as e:          # one model transformers cannot build
            print(f"error: {type(e).__name__}: {e}")
        sys.stdout.flush()
else:
    run(*sys.argv[1:5])
