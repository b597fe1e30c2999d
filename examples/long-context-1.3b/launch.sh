#!/bin/bash
set -euo pipefail

deepspeed --num_gpus 8 train.py
