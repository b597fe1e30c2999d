"""Runs inside the llm-analysis peer environment (never the project's):
`llm_analysis.analysis.train(**kwargs)`, printing its summary dict as JSON (what its
command line prints through fire).

    python llm_analysis_train.py MODEL_CONFIG_JSON KWARGS_JSON
"""

import json
import sys

from llm_analysis.analysis import train

kwargs = json.loads(sys.argv[2])
summary = train(model_name=sys.argv[1], log_level="ERROR", **kwargs)
print(json.dumps(summary, indent=1, default=str))
