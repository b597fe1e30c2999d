"""What Hydra composition reads, as small config folders and the values they compose to
(run as tests)."""

from __future__ import annotations

from preflight.lang.hydra.values import Unresolved
from preflight.lang.overrides import LangExample

_PRIMARY = """\
defaults:
  - model: small
  - optional site: local
  - _self_

trainer:
  devices: 1
  num_nodes: 1
model:
  micro_batch_size: 2
  seq_length: ${.encoder_seq_length}
  global: ${multiply:${trainer.devices},${model.micro_batch_size}}
  home: ${oc.env:DATA_HOME,/data}
  steps: ${eval:'2 ** 10'}
  bad: ${eval:'__import__("os")'}
  loop: ${model.loop}
"""

EXAMPLES = [
    LangExample(title="defaults list, `_self_` last, relative / absolute / arithmetic interpolation, "
                      "`oc.env` unknown, a cycle unknown, `eval` of code unknown",
                run="compose",
                files={"conf/config.yaml": _PRIMARY,
                       "conf/model/small.yaml": "hidden: 512\nencoder_seq_length: 1024\nmicro_batch_size: 8\n"},
                given={"folder": "conf", "name": "config"},
                expect={"model.hidden": (512, "conf/model/small.yaml:1"),
                        "model.micro_batch_size": (2, "conf/config.yaml:10"),
                        "model.seq_length": (1024, "conf/config.yaml:11"),
                        "model.global": (2, "conf/config.yaml:12"),
                        "model.home": (Unresolved, "conf/config.yaml:13"),
                        "model.steps": (1024, "conf/config.yaml:14"),
                        "model.bad": (Unresolved, "conf/config.yaml:15"),
                        "model.loop": (Unresolved, "conf/config.yaml:16")}),
    LangExample(title="command-line overrides: a group choice, a value, an added key, a deletion",
                run="compose",
                files={"conf/config.yaml": _PRIMARY,
                       "conf/model/small.yaml": "hidden: 512\nencoder_seq_length: 1024\n",
                       "conf/model/big.yaml": "hidden: 4096\nencoder_seq_length: 4096\n"},
                given={"folder": "conf", "name": "config",
                       "words": ["model=big", "trainer.devices=8", "+model.lora_rank=16", "~model.home"]},
                expect={"model.hidden": (4096, "conf/model/big.yaml:1"),
                        "trainer.devices": (8, "<command>:1"),
                        "model.lora_rank": (16, "<command>:1"),
                        "model.seq_length": (4096, "conf/config.yaml:11"),
                        "model.global": (16, "conf/config.yaml:12"),
                        "model.home": (None, None)}),
    LangExample(title="`group@package` and `override` in the primary's defaults; a missing option "
                      "is a located finding",
                run="compose",
                files={"conf/ppo.yaml": "defaults:\n  - actor@roles.actor: dp\n  - override actor: fsdp\n"
                                        "  - data: gone\n  - _self_\nroles:\n  actor:\n    lr: 0.1\n",
                       "conf/actor/dp.yaml": "strategy: dp\nlr: 1.0\n",
                       "conf/actor/fsdp.yaml": "strategy: fsdp\nlr: 1.0\n"},
                given={"folder": "conf", "name": "ppo"},
                expect={"roles.actor.strategy": ("fsdp", "conf/actor/fsdp.yaml:1"),
                        "roles.actor.lr": (0.1, "conf/ppo.yaml:8"),
                        "!diagnostics": ["'data/gone' not found"]}),
    LangExample(title="`hydra.searchpath` (`file://` from the app's root, `pkg://` a package "
                      "of the repository): the defaults' configs are found there",
                run="compose",
                files={"app/conf/app.yaml": "hydra:\n  searchpath:\n    - file://lib/conf\n"
                                            "defaults:\n  - base\n  - _self_\nextra: 1\n",
                       "lib/conf/base.yaml": "train:\n  batch: 8\n  lr: 0.1\n"},
                given={"folder": "app/conf", "name": "app", "words": ["train.batch=4"]},
                expect={"train.batch": (4, "<command>:1"), "train.lr": (0.1, "lib/conf/base.yaml:3"),
                        "!no_diagnostics": ["no key"]}),
    LangExample(title="a config the defaults name is not found: the merge may lack its keys, so an "
                      "override of one is no 'no key' finding",
                run="compose",
                files={"conf/app.yaml": "defaults:\n  - missing_base\n  - _self_\nextra: 1\n"},
                given={"folder": "conf", "name": "app", "words": ["train.batch=4"]},
                expect={"train.batch": (4, "<command>:1"),
                        "!diagnostics": ["'missing_base' not found"],
                        "!no_diagnostics": ["no key"]}),
]
