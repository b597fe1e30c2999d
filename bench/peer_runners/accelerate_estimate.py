"""Runs inside the accelerate peer environment (never the project's): accelerate's own
`estimate-memory` command on a local model directory.

`accelerate estimate-memory` first asks the Hub whether the repository exists
(`verify_on_hub`), which an offline machine cannot answer; this script answers that one
question for a local directory that holds the row's config.json (the repository metadata
it reads is only `config` / `library_name`), then runs the command's own parser and
`estimate_command` unchanged, so what it prints is accelerate's table.

    python accelerate_estimate.py CONFIG_DIR DTYPE
    python accelerate_estimate.py --jobs JOBS_JSON    # [[marker, CONFIG_DIR, DTYPE], …]

With --jobs, each job's table follows a line `=== <marker>` (one process for many rows).
"""

import json
import sys
from types import SimpleNamespace

from accelerate.commands import estimate

estimate.verify_on_hub = lambda repo, token=None: SimpleNamespace(
    config={}, library_name="transformers")


def run(model_dir, dtype):
    parser = estimate.estimate_command_parser()
    args = parser.parse_args([model_dir, "--library_name", "transformers", "--dtypes", dtype])
    estimate.estimate_command(args)


if sys.argv[1] == "--jobs":
    for marker, model_dir, dtype in json.load(open(sys.argv[2])):
        print(f"=== {marker}", flush=True)
        try:
            run(model_dir, dtype)
        except Exception as e:          # one model transformers cannot build
            print(f"error: {type(e).__name__}: {e}")
        sys.stdout.flush()
else:
    run(sys.argv[1], sys.argv[2])
