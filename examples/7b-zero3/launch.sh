#!/bin/bash
#SBATCH --job-name=llama7b-sft-zero3
#SBATCH --nodes=1
#SBATCH --gpus-per-node=8
set -euo pipefail

deepspeed --num_gpus 8 train.py
