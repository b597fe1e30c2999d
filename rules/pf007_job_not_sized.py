"""PF007: the job was not sized — a fact its memory needs, or the GPU, is unknown."""

from preflight.engine import Example, Rule
from preflight.sizing import clauses, has_evidence, how_to_supply, not_sized

_ENV_BATCH = """\
import os
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("gpt2")
model = AutoModelForCausalLM.from_pretrained("gpt2")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
data = tok(["a text"] * 64, max_length=1024, truncation=True, padding="max_length")
loader = torch.utils.data.DataLoader(data["input_ids"], batch_size=int(os.environ["BATCH_SIZE"]))
for batch in loader:
    model(batch, labels=batch).loss.backward()
    opt.step()
"""

_SIZED = """\
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

tok = AutoTokenizer.from_pretrained("gpt2")
model = AutoModelForCausalLM.from_pretrained("gpt2")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
data = tok(["a text"] * 64, max_length=1024, truncation=True, padding="max_length")
loader = torch.utils.data.DataLoader(data["input_ids"], batch_size=8)
for batch in loader:
    model(batch, labels=batch).loss.backward()
    opt.step()
"""

#: nothing in the job says how long its sequences are
_NO_SEQ = _SIZED.replace(", max_length=1024, truncation=True, padding=\"max_length\"", "")

_CLI_SIZED = """\
import argparse
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

p = argparse.ArgumentParser()
p.add_argument("--batch_size", type=int)
p.add_argument("--max_length", type=int, default=1024)
args = p.parse_args()
tok = AutoTokenizer.from_pretrained("gpt2")
model = AutoModelForCausalLM.from_pretrained("gpt2")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
data = tok(["a text"] * 64, max_length=args.max_length, truncation=True)
loader = torch.utils.data.DataLoader(data["input_ids"], batch_size=args.batch_size)
"""


class JobNotSized(Rule):
    """
    ## What it does
    Reports a job whose per-GPU memory could not be worked out: a fact the ledger needs
    (parameters, micro-batch, sequence length, world size…) is unknown, or no GPU was
    given to size it against. The finding names each missing fact, where it was looked
    for, and the flag that supplies it. A fact that already has its own finding — `PF003`
    at the line that makes it unknown, `PF004` for a model that could not be sized — is not
    named twice; the summary line counts every job that was not sized, whatever the
    findings shown.

    ## Why is this bad
    A check that could not size a job has not checked it. Saying nothing would read as a
    pass: a 7B full fine-tune whose micro-batch comes from an environment variable needs
    112 GB of model states before its first activation, and a report without a number for
    it must say so rather than "All checks passed".

    ## Example
    ```python
    # micro-batch from the environment, no GPU given
    loader = DataLoader(ds, batch_size=int(os.environ["BATCH_SIZE"]))
    ```

    ## Use instead
    Supply what the files do not say, on the command line or for good in pyproject.toml:
    ```console
    $ preflight check train.py --set micro_batch=4 --gpu H100
    ```
    ```toml
    [[tool.preflight.jobs]]
    entry = "train.py"
    gpu = "H100"
    ```
    """

    code = "PF007"
    name = "job-not-sized"
    summary = "The job was not sized: a fact its memory needs, or the GPU, is unknown"
    severity = "info"
    misconception = None
    case = None

    INVALID = [
        # the micro-batch's own PF003 says why it is unknown; PF007 names the GPU
        Example(files={"train.py": _ENV_BATCH}, gpu=None,
                expect=[("PF007", "train.py", 1)]),
        Example(files={"train.py": _SIZED}, gpu=None,
                expect=[("PF007", "train.py", 1)]),
        Example(files={"train.py": _NO_SEQ}, expect=[("PF007", "train.py", 1)]),
    ]
    VALID = [
        Example(files={"train.py": _SIZED}),
        Example(files={"train.py": _CLI_SIZED}, command="python train.py --batch_size 4"),
    ]

    def check(self, ctx):
        job = ctx.job
        entry = job.entry if job is not None else None
        why = ctx.unsized or not_sized(ctx.plan, ctx.estimate, entry=entry,
                                       diagnostics=job.diagnostics if job is not None else ())
        # the pipeline's verdict already weighed whether this is a training job (settings
        # read, or a script a distributed launcher starts); alone, the rule asks the plan
        if why is None or (ctx.unsized is None and not has_evidence(ctx.plan)):
            return
        if why.not_analysed:
            # the entry's own PF001 / PF002 is the finding; a list of missing facts says nothing
            return
        # one root cause, one finding: a fact whose own finding is already there (PF003 at
        # the line that makes it unknown, PF004 for a model that could not be sized) is not
        # named again; the summary still counts the job as not sized
        said = _said(job.diagnostics if job is not None else ())
        missing = [m for m in why.missing if m.fact not in said]
        if not missing:
            return
        anchor = next((m.source for m in missing
                       if m.source is not None and m.source.line), None)
        if anchor is None and entry:
            anchor = ctx.src()
        details = "; ".join(clauses(missing, reasons=True))
        yield self.diagnostic(
            f"job not sized: {details}", anchor,
            fix=f"supply them: {how_to_supply(missing)} (or [[tool.preflight.jobs]] in "
                f"pyproject.toml)",
            data={"facts": [m.fact for m in missing]})


#: the facts a model that could not be resolved leaves unknown (its PF004 says so)
_MODEL_SHAPE = frozenset({"params", "trainable_params", "layers", "hidden", "heads", "kv_heads",
                          "ffn_hidden", "vocab"})


def _said(diagnostics) -> set:
    out: set = set()
    for d in diagnostics:
        if d.code == "PF003" and (d.data or {}).get("fact"):
            out.add(d.data["fact"])
        elif d.code == "PF004":
            out |= _MODEL_SHAPE
    return out
