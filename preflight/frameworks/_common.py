"""What the launcher adapters share to read a launch line: the facts one line collects (at
the positions of their flags), its options, the config files its script arguments name,
and the program it finally runs."""

from __future__ import annotations

import re
from typing import Optional

from preflight.lang import overrides
from preflight.lang.shell.lines import locate_flag
from preflight.lang.shell.values import MARKED, readable, reason_of
from preflight.plan import Fact, Invocation, Origin, Source

CONFIG_EXT = (".json", ".yaml", ".yml", ".toml")
#: flags whose value is a DeepSpeed config file (any extension)
#: what a launcher's GPU count says when it starts one process per visible GPU (torchrun
#: `--nproc_per_node gpu`, `deepspeed` without --num_gpus / --include): the launch script's
#: CUDA_VISIBLE_DEVICES then gives the count (preflight.extract.shell_file)
EVERY_VISIBLE_GPU = "uses every visible GPU"
#: a bare `key=value` word, and the key names that say its value is a config file
_KEY_WORD = re.compile(r"\+{0,2}([A-Za-z_][\w.]*)=(.*)", re.S)
_CONFIG_KEY = re.compile(r"(^|[._])(config|cfg|conf)(_?file|_?path)?$", re.I)
DS_CONFIG_FLAGS = ("deepspeed", "deepspeed_config", "deepspeed_config_file", "ds_config")
#: an option whose name says it takes data or writes output (`--train_file x.json`,
#: `--save_path stats.json`, `--in-files a.json`): the file it names is no config of the job
#: (an output need not exist yet), unless the name also says config (`--dataset_config`)
_DATA_FLAG = re.compile(r"(^|_)(out|outputs?|save|saved|dump|write|dest|results?|logs?|report|"
                        r"stats|statistics|cache|data|datasets?|train|eval|valid|validation|"
                        r"test|in|inputs?|prompts?|corpus|samples?|predictions?)(_|$)", re.I)
_CONFIG_FLAG = re.compile(r"config|cfg|conf|recipe|deepspeed|fsdp|accelerate", re.I)


def option_at(words: list[str], i: int) -> tuple[str, Optional[str], int]:
    """Option at words[i]: (name, inline value or None, index after the name)."""
    w = words[i]
    if w.startswith("--") and "=" in w:
        k, v = w.split("=", 1)
        return k, v, i + 1
    return w, None, i + 1


class LaunchLine:
    """The facts one launch line collects, each at the position of its flag."""

    def __init__(self, source: Optional[Source], origin: Origin, unknown: dict[str, str]):
        self.source, self.origin, self.unknown = source, origin, unknown
        self.facts: list[tuple[str, Fact]] = []
        self.configs: list[str] = []
        #: the environment the line runs with: the script's variables and the line's own
        #: `VAR=value` prefix (a program that reads its layout from the environment:
        #: `NPROC_PER_NODE=8 swift sft …`)
        self.env: dict = {}

    def fact(self, name: str, raw: Optional[str], conv=None, flag: str = "") -> None:
        if raw is None:
            return
        src = locate_flag(self.source, flag) if flag else self.source
        if raw in self.unknown:
            self.facts.append((name, Fact.unknown(f"{flag}: {self.unknown[raw]}", source=src)))
            return
        val = conv(raw) if conv else raw
        if val is None:
            why = reason_of(raw)        # a piece the shell expansion left unknown
            self.facts.append((name, Fact.unknown(
                f"{flag} {readable(raw)}: {why}" if why else
                f"{flag} {raw!r} is not a fixed number", source=src)))
            return
        self.facts.append((name, Fact(value=val, origin=self.origin, source=src,
                                      reason=f"{flag} {raw}".strip())))


def script_configs(args: list[str], base: str) -> list[str]:
    """Config files named in the script's arguments (`--deepspeed ds.json`, `cfg.yaml`)."""
    out: list[str] = []
    data = False        # the words after a data or output option are its values (`--in-files a b`)
    for i, a in enumerate(args):
        if a.startswith("-"):
            opt = a.split("=", 1)[0].lstrip("-").replace("-", "_")
            data = bool(_DATA_FLAG.search(opt)) and not _CONFIG_FLAG.search(opt)
        v = a.split("=", 1)[1] if a.startswith("--") and "=" in a else a
        if data:
            continue
        if not a.startswith("-") and "=" in a:
            # an OmegaConf / Hydra override: `config=path.yaml` names a config file,
            # `optim.lr=3e-4` none
            v = overrides.config_path(a) or ""
            if not v:
                continue
        if v.startswith("-"):
            continue
        m = _KEY_WORD.fullmatch(v)
        if m is not None:
            # a `key=value` word (OmegaConf / Hydra command lines): the value names the
            # config only under a config key (`config=run.yaml`); `data.files=x.yaml` is data
            if not _CONFIG_KEY.search(m.group(1)):
                continue
            v = m.group(2)
        # a DeepSpeed config is named by its flag, whatever its extension (.conf, none)
        flag = a.split("=", 1)[0] if a.startswith("--") and "=" in a else (args[i - 1] if i else "")
        named = flag.lstrip("-").replace("-", "_") in DS_CONFIG_FLAGS
        # a `.py` argument may be a Python config (mmengine, detectron2 LazyConfig): discovery
        # keeps it only when its text is one (`preflight.lang.pyconfig.is_config_module`)
        if (named or v.lower().endswith(CONFIG_EXT + (".py",))) and not re.search(r"[*?]", v):
            out.append(v)
    return out


def program_invocation(rest: list[str], i: int, ln: LaunchLine, module_flag: bool) -> Invocation:
    """The invocation of a launcher line whose options end at `rest[i]`: the script (or,
    with `module_flag`, the module) and its arguments, with the facts `ln` collected."""
    if i >= len(rest):
        return Invocation(script="", args=[], source=ln.source, facts=ln.facts, configs=ln.configs)
    if not module_flag and MARKED.fullmatch(rest[i]):
        # `deepspeed $WORKER_STR train.py …`: a word that is wholly an unknown expansion
        # before the script is more launcher options (or nothing); the script is the
        # `.py` after it, and the counts the launcher would default are unknown
        k = i
        while k < len(rest) and MARKED.fullmatch(rest[k]):
            k += 1
        # (`deepspeed {num_gpus_flag} --module training.trainer …`: the module after it)
        to_module = k + 1 < len(rest) and rest[k] in ("--module", "-m")
        if k < len(rest) and (rest[k].endswith(".py") or to_module):
            why = (f"the launcher's options include {readable(rest[i])} "
                   f"({reason_of(rest[i]) or 'not known statically'})")
            ln.facts = [(n, Fact.unknown(why, source=ln.source))
                        if n in ("nodes", "gpus_per_node", "world_size")
                        and (f.origin == Origin.DEFAULT or not f.known)
                        else (n, f) for n, f in ln.facts]
            i = k + 1 if to_module else k
            module_flag = module_flag or to_module
    script, args = rest[i], rest[i + 1:]
    return Invocation(script=script, args=args, source=ln.source,
                      module=script if module_flag else None, facts=ln.facts,
                      configs=ln.configs + script_configs(args, ""))
