"""Command-line flags whose meaning is fixed by a widely used training framework.

A script's own argparse is read by the Python extractor; the flags a framework defines
(the Hugging Face `TrainingArguments` and TRL / PEFT script arguments, Megatron-LM,
OpenRLHF) mean the same thing wherever they appear. Each framework adapter owns its table
(`FLAGS`); this module parses a line's arguments and applies the table of the framework
the line runs, with origin `cli`.
"""

from __future__ import annotations

from typing import Any, Optional

from preflight.frameworks import flag_reader, get
from preflight.lang.shell.lines import locate_flag
from preflight.lang.shell.values import reason_of
from preflight.plan import Fact, Origin, Source


def parse_args(args: list[str]) -> dict[str, tuple[Optional[str], int]]:
    """`--name value` / `--name=value` / `--flag` → {name: (value or None, index)}; later wins."""
    out: dict[str, tuple[Optional[str], int]] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and len(a) > 2:
            if "=" in a:
                k, v = a[2:].split("=", 1)
                out[k] = (v, i)
                i += 1
                continue
            nxt = args[i + 1] if i + 1 < len(args) else None
            if nxt is not None and not (nxt.startswith("--") and len(nxt) > 2):
                out[a[2:]] = (nxt, i)
                i += 2
                continue
            out[a[2:]] = (None, i)
        elif len(a) in (2, 3) and a[0] == "-" and a[1:].isalpha():
            # a one-letter option (`-b 64`) is kept under its own spelling, dash and all: no
            # table reads it until a framework names it (`Framework.short_flags`)
            nxt = args[i + 1] if i + 1 < len(args) else None
            if nxt is not None and not nxt.startswith("-"):
                out[a] = (nxt, i)
                i += 2
                continue
            out[a] = (None, i)
        i += 1
    return out


def flag_facts(args: list[str], source: Optional[Source],
               unknown: Optional[dict[str, str]] = None, script: str = "") -> tuple[list[tuple[str, Fact]], dict[str, Any]]:
    """Facts that well-known flags among a script's arguments fix, and the raw parsed flags."""
    parsed = parse_args(args)
    facts: list[tuple[str, Fact]] = []
    fw, table = flag_reader(parsed, script)
    short = get(fw).short_flags if fw is not None else {}
    if short:
        # the framework's one-letter options (`-b 64`) are its long flags
        args = [f"--{short[a]}" if a in short else a for a in args]
        parsed = parse_args(args)
    megatron = fw == "megatron"
    for key, (val, _) in parsed.items():
        k = key if megatron else key.replace("-", "_")
        if k not in table:
            k = k.rsplit(".", 1)[-1]          # a dotted group prefix: `--ds.zero_stage`
        if k not in table:
            continue
        entries = table[k] if isinstance(table[k], list) else [table[k]]
        shown = f"--{key}" + (f" {val}" if val is not None else "")
        where = locate_flag(source, f"--{key}")
        for name, conv in entries:          # a flag may fix several facts (`--dtype fp16`)
            if val is not None and "\x00" in val:
                facts.append((name, Fact.unknown(f"--{key}: {reason_of(val)}", source=where)
                              .model_copy(update={"over": Origin.CLI})))
                continue
            v = conv(val)
            if v is None:
                if val is not None and name in ("micro_batch", "grad_accum", "seq_len", "tp", "pp"):
                    facts.append((name, Fact.unknown(f"{shown} is not a number", source=where)))
                continue
            facts.append((name, Fact(value=v, origin=Origin.CLI, source=where, reason=shown)))
    if fw is not None:
        facts += get(fw).line_facts(args, source)
        plain = {k.rsplit(".", 1)[-1].replace("-", "_"): v for k, (v, _) in parsed.items()}
        # and each grouped flag under its whole name (`ds.lora.rank` beside `rank`)
        plain.update({k.replace("-", "_"): v for k, (v, _) in parsed.items() if "." in k})
        lora = get(fw).flag_lora(plain, script)
        if lora is not None:
            facts.append(("lora", Fact(value=lora, origin=Origin.CLI, source=source,
                                       reason=f"--lora_r {lora['r']}")))
    return facts, {"megatron": megatron, "flags": parsed, "framework": fw}
