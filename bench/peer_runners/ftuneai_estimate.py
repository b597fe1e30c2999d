"""Runs inside the ftuneai peer environment (never the project's):
`ftuneai.Estimator(**kwargs).estimate_memory()`, printing the MemoryBreakdown as JSON.

The model is looked up in ftuneai's own model database by the row's model name. For a
name it does not hold, ftuneai would fetch the config from the Hub with urllib (which
ignores HF_HUB_OFFLINE); that fetch is made to fail here, so what it answers does not
depend on the network: `{"error": …}` with its message.

    python ftuneai_estimate.py KWARGS_JSON
"""

import dataclasses
import json
import sys
from urllib.error import URLError

import ftuneai.hub
from ftuneai import Estimator


def _offline(*args, **kwargs):
    raise URLError("offline: the Hub is not consulted")


ftuneai.hub._fetch_json = _offline
try:
    breakdown = Estimator(**json.loads(sys.argv[1])).estimate_memory()
except URLError:
    print(json.dumps({"error": "the model is not in ftuneai's model database, and its Hub "
                               "fallback is not consulted"}))
except KeyError as e:
    print(json.dumps({"error": str(e.args[0]).split(". Available")[0]}))
else:
    print(json.dumps(dataclasses.asdict(breakdown), indent=1, default=str))
