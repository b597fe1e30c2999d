"""Python config files, read statically: a module whose top level only assigns values.

Vision and detection toolkits write their training configs as Python modules that are
executed by the framework's loader, never by the job itself:

* mmengine / mmcv style — module-level assignments (`model = dict(type='X', ...)`,
  `optim_wrapper = dict(...)`, `train_dataloader = dict(batch_size=16)`), inheritance by
  `_base_ = ['../_base_/models/x.py', ...]` (each base's variables merged under the
  file's: dicts key by key, `_delete_=True` replacing instead), `{{_base_.var}}` and
  `_base_.var` references to a base's variables, and the pure-Python form `with
  read_base(): from .._base_.x import *` with `var.update(...)`;
* detectron2 LazyConfig — `from ..common.x import model` (another config file's variable),
  `LazyCall(Cls)(a=1)` / `L(Cls)(...)` (a dict with `_target_`), attribute assignments
  into those dicts (`dataloader.train.total_batch_size = 64`, `train.amp.enabled = True`).

`read(path, text, read_file)` evaluates such a file into a `PyConfig`: a nested dict of
plain values, the position of every key (and the file that wrote it, a base's or the
file's own), the files read and the diagnostics. Nothing is imported or run: the value
language is literals, `dict(...)` / `list(...)`, names bound earlier, arithmetic through
`preflight.lang.bounded`, f-strings, subscripts and attributes of dicts. Any other
expression is an `Opaque` value carrying its reason (an adapter reads it as unknown).

Budgets keep the reading linear: at most `MAX_FILES` files, `MAX_NODES` evaluated nodes
over all of them, expressions nested at most `MAX_DEPTH` deep. `is_config_module` tells a
config file from a script (only assignments, imports and `with read_base()` at its top).

The package, one module per idea: `values` (the values read and the budgets), `recognise`
(config or script), `inherit` (`_base_` merging, `{{_base_.x}}`), `lazyconfig` (detectron2
LazyCall, OmegaConf, repository imports), `evaluate` (expressions, with the node budget),
`reader` (statements and files: `read`), `examples` (the EXAMPLES run as tests).
"""

from typing import Callable, Optional

from preflight.lang.pyconfig.examples import EXAMPLES, UNREAD
from preflight.lang.pyconfig.inherit import merge, merge_flat
from preflight.lang.pyconfig.recognise import is_config_module, looks_like_config
from preflight.lang.pyconfig.values import (MAX_BYTES, MAX_DEPTH, MAX_FILES, MAX_NODES, CDict,
                                            Name, Opaque, Pos, PyConfig, opaque_reason)
from preflight.lazy import lazy

# the reader (statements, expressions, LazyConfig) is loaded when a Python config is read,
# not when a check only asks whether a file is one (`is_config_module`, every script's check)
_reader = lazy("preflight.lang.pyconfig.reader")


def read(path: str, text: str, read_file: Callable[[str], Optional[str]]) -> PyConfig:
    """A Python config file's variables merged over its bases' (`reader.read`)."""
    return _reader.read(path, text, read_file)


__all__ = ["EXAMPLES", "MAX_BYTES", "MAX_DEPTH", "MAX_FILES", "MAX_NODES", "UNREAD", "CDict",
           "Name", "Opaque", "Pos", "PyConfig", "is_config_module", "looks_like_config",
           "merge", "merge_flat", "opaque_reason", "read"]
