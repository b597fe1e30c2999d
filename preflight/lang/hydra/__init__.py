"""Hydra / OmegaConf configs, composed without running the app.

A Hydra app names a config folder and a primary config (`@hydra.main(config_path=…,
config_name=…)`, or `--config-path` / `--config-name` on the command line). Composition:

- the **defaults list** of each config, in order: `group: option` (the file
  `group/option.yaml`, merged at the package `group`), `group@pkg: option` (at `pkg`,
  `_global_` for the top), `/group: option` (a group from the top of the folder),
  `optional group: option` (no finding when the file is missing), `override group: option`
  (a new choice for a group chosen elsewhere), `group: null` (nothing), plain config names,
  and `_self_` (where the config's own keys go; at the end when the list does not say);
- **command-line overrides** (`preflight.lang.overrides`): `group=option` chooses a group's
  file, `+group=option` adds one, `~group` removes one; `key=value`, `+key=value`,
  `++key=value` and `~key` set, add and delete values after the merge;
- **interpolation** `${…}` once everything is merged: absolute keys (`${model.hidden}`),
  relative ones (`${.x}`, `${..x}`), `${oc.select:key,default}`, `${oc.env:VAR,default}`
  (known only where the launcher sets VAR — the user's environment is not known), and the
  arithmetic resolvers apps register under their plain names (`multiply`, `sum`, `add`,
  `subtract`, `divide`, `floordiv`, `max`, `min`, `int`) and `eval` of an arithmetic
  expression of numbers (never code: anything else in it is unknown). A reference that
  cannot be resolved, a cycle, a chain past `MAX_INTERPOLATION_DEPTH`, an unknown resolver
  and a mandatory `???` left unset are `Unresolved` values with their reason.

Every value keeps where it was set (`Composed.where`: key path → file:line, or the
override's word on the launch line), so a fact points at the line that decides it.
Budgets: `includes.MAX_FILES` documents, `includes.MAX_TOTAL_BYTES` bytes,
`MAX_DEFAULTS_DEPTH` levels of defaults lists, `MAX_INTERPOLATIONS` resolutions.

Modules, one idea each:
- `values`        — the composed config (`Composed`) and the `Unresolved` marker
- `defaults`      — defaults lists: entries, packages, the merge of a config and its groups
- `interpolation` — `${…}` resolution, resolvers and their budgets
- `composition`   — composition with the launch line's overrides
- `app`           — which folder and primary config an app composes
- `examples`      — what composition reads, as small config folders (tests)
"""

from typing import Any, Callable, Optional

from preflight.lang.hydra.app import app_config, cli_config
from preflight.lang.hydra.defaults import MAX_DEFAULTS_DEPTH, is_defaults_list
from preflight.lang.hydra.examples import EXAMPLES
from preflight.lang.hydra.values import Composed, Unresolved, unresolved_reason
from preflight.lang.includes import Loaded
from preflight.lazy import lazy
# the type of the override words, which callers name in the `locate` hook of `compose`
from preflight.lang.overrides import Override
from preflight.plan import Source

# composition and interpolation are loaded when a config is composed, not when a check only
# asks whether a YAML has a defaults list (`is_defaults_list`, every YAML's check)
_composition = lazy("preflight.lang.hydra.composition")


def compose(folder: str, name: str, words: Optional[list[str]] = None, *,
            locate: Optional[Callable[[Override], Optional[Source]]] = None,
            env: Optional[dict[str, Any]] = None, values: bool = True,
            loaded: Optional[Loaded] = None) -> Composed:
    """The config `name` of `folder` composed with the override words (`composition.compose`)."""
    return _composition.compose(folder, name, words, locate=locate, env=env, values=values,
                                loaded=loaded)


__all__ = ["EXAMPLES", "MAX_DEFAULTS_DEPTH", "Composed", "Override", "Unresolved",
           "app_config", "cli_config", "compose", "is_defaults_list", "unresolved_reason"]
