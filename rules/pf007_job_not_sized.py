"""PF007: the job was not sized — a fact its memory needs, or the GPU, is unknown."""

from preflight.engine import Example, Rule
from preflight.rules._common import line_of
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


_RANK = {"info": 0, "warning": 1, "error": 2}


class JobNotSized(Rule):
    """
    ## What it does
    Reports a job whose per-GPU memory could not be worked out: a fact the ledger needs
    (parameters, micro-batch, sequence length, world size…) is unknown, the entry script
    could not be read, or no GPU was given to size it against. The finding names each
    missing fact, where it was looked for, and the flag that supplies it.

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
        Example(files={"train.py": _ENV_BATCH},
                expect=[("PF007", "train.py", line_of(_ENV_BATCH, "BATCH_SIZE"))]),
        Example(files={"train.py": _SIZED}, gpu=None,
                expect=[("PF007", "train.py", 1)]),
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
        if why is None or not has_evidence(ctx.plan):
            return
        if why.not_analysed:
            # the entry's own PF001 / PF002 is the finding; a list of missing facts says nothing
            return
        anchor = next((m.source for m in why.missing
                       if m.source is not None and m.source.line), None)
        if anchor is None and entry:
            anchor = ctx.src()
        details = "; ".join(clauses(why.missing, reasons=True))
        names = [m.fact for m in why.missing]
        absorbs = [{"code": "PF003", "fact": n} for n in names] + (
            # the model that could not be sized: its PF004 says the same
            [{"code": "PF004", "fact": None}] if "params" in names else [])
        # the findings this one takes the place of keep their weight (an unresolved model
        # is a warning)
        gone = {(a["code"], a["fact"]) for a in absorbs}
        worst = max((d.severity for d in (job.diagnostics if job is not None else ())
                     if (d.code, (d.data or {}).get("fact")) in gone),
                    key=_RANK.get, default=self.severity)
        yield self.diagnostic(
            f"job not sized: {details}", anchor,
            fix=f"supply them: {how_to_supply(why.missing)} (or [[tool.preflight.jobs]] in "
                f"pyproject.toml)",
            severity=worst, data={"facts": names, "absorbs": absorbs})
