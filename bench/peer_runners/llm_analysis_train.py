"""Runs inside the llm-analysis peer environment (never the project's):
`llm_analysis.analysis.train(**kwargs)`, printing its summary dict as JSON (what its
command line prints through fire), or `{"error": …}` with the assertion it refuses with.

    python llm_analysis_train.py MODEL_CONFIG_JSON KWARGS_JSON
"""

import json
import sys

from llm_analysis.analysis import train

kwargs = json.loads(sys.argv[2])
try:
    summary = train(model_name=sys.argv[1], log_level="ERROR", **kwargs)
except AssertionError as e:     # its own refusal, e.g. the batch does not fit the GPU config
    print(json.dumps({"error": str(e)}))
else:
    print(json.dumps(summary, indent=1, default=str))
