"""New keywords written into a call keep its layout, byte for byte everywhere else: one per
line in a call written one per line (a trailing comma stays last, a comment stays with its
argument), inline in an inline call, right after `(` in an empty call, CRLF kept."""

import pytest

from preflight.fix.python_file import _add_keywords

CASES = [
    ("TrainingArguments()", 'TrainingArguments(fsdp="full_shard")'),
    ("TrainingArguments( )", 'TrainingArguments(fsdp="full_shard" )'),
    ("TrainingArguments(output_dir='o')", "TrainingArguments(output_dir='o', fsdp=\"full_shard\")"),
    ("TrainingArguments(output_dir='o',  bf16=True)",
     "TrainingArguments(output_dir='o',  bf16=True,  fsdp=\"full_shard\")"),
    ("TrainingArguments(\n    output_dir='o',\n    bf16=True,\n)",
     "TrainingArguments(\n    output_dir='o',\n    bf16=True,\n    fsdp=\"full_shard\",\n)"),
    ("TrainingArguments(\n    output_dir='o',  # where\n    bf16=True  # precision\n)",
     "TrainingArguments(\n    output_dir='o',  # where\n    bf16=True,\n    fsdp=\"full_shard\"  # precision\n)"),
    ("TrainingArguments(\r\n    output_dir='o',\r\n    bf16=True)",
     "TrainingArguments(\r\n    output_dir='o',\r\n    bf16=True,\r\n    fsdp=\"full_shard\")"),
    ("f(a, *rest, k=f(1, 2))", 'f(a, *rest, k=f(1, 2), fsdp="full_shard")'),
]


@pytest.mark.parametrize("before, after", CASES)
def test_a_keyword_is_added_in_the_calls_own_layout(before, after):
    assert _add_keywords([("fsdp", '"full_shard"')])(before) == after


def test_two_keywords_share_the_separator():
    before = "TrainingArguments(\n        a=1,\n        b=2)"
    got = _add_keywords([("fsdp", '"full_shard"'), ("gradient_checkpointing", "True")])(before)
    assert got == ("TrainingArguments(\n        a=1,\n        b=2,\n        fsdp=\"full_shard\",\n"
                   "        gradient_checkpointing=True)")


def test_the_check_path_never_imports_libcst_for_a_fix():
    import subprocess
    import sys

    from tests.conftest import ROOT
    code = ("import sys, preflight\n"
            "r = preflight.check(['examples/7b-full-finetune-ddp'])\n"
            "assert r.jobs[0].fix is not None and r.jobs[0].fix.diff()\n"
            "print('libcst' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "False", out.stderr
