#!/bin/bash
#SBATCH --job-name=llama7b-sft-zero3
#SBATCH --nodes=1
#SBATCH --gpus-per-node=8
set -euo pipefail

deepspeed --num_gpus 8 train.py --output_dir out --per_device_train_batch_size 4 \
    --optim adamw_torch --bf16 True --gradient_checkpointing True --deepspeed ds_zero3.json
