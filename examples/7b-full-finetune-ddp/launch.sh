#!/bin/bash
#SBATCH --job-name=llama7b-sft
#SBATCH --nodes=1
#SBATCH --gpus-per-node=8
set -euo pipefail

torchrun --standalone --nproc_per_node 8 train.py
