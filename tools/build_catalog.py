"""Build preflight/models/catalog.json from the recorded model configs.

    python tools/build_catalog.py            # build, count new configs with transformers, write
    python tools/build_catalog.py --offline  # build from the recorded counts only (no transformers)
    python tools/build_catalog.py --check    # exit 1 when catalog.json is not what would be built

Inputs, all under tools/catalog/:

- `sources/*.json`, one file per origin: where the configs were read (`repository`, `commit`,
  `read` date) and, for each checkpoint, its hub `id`, the `path` it was read from and its
  `config.json` (`config`), with optional `aliases` (hub ids that share the config) and
  `revision`, an `arch` where the file's `model_type` is not transformers' (with `arch_why`),
  or `left_out` (why the record is not the checkpoint's config.json); a source read from web pages (`hub_pages.json`: the hub's own config.json
  pages) has no commit, and each record's `path` is the page's address; a source of copies
  committed in several repositories (`copied_configs.json`) gives each record its own
  `repository` and `commit`.
  `hand_entered.json` holds the catalogue's first entries, typed in by hand; a config read
  from a recorded source replaces the hand-entered fields of the same model.
- `transformers_counts.json`: for each entry, the parameter count transformers builds from
  its config on the meta device (no memory, no weights), with the config's digest, the class
  and the transformers version. New or changed configs are counted when transformers is
  installed (the test extra); `--offline` uses the record only.

Each entry's count from preflight's formula (`preflight.models.formulas.count`) must equal
the recorded transformers count: an entry whose counts differ, or whose config the formula
cannot read, is reported and left out of the catalogue (never written with a count the two
disagree on), and the script exits 1. An entry whose architecture has no formula yet is kept,
with its full config, and reported as not yet verified; once a formula exists, the next build
verifies it against the recorded count.

The output is deterministic: entries sorted by name, keys sorted, one layout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from typing import Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from preflight.models import formulas  # noqa: E402
from preflight.models.shape import UnsupportedArchitecture  # noqa: E402

SOURCES = os.path.join(ROOT, "tools", "catalog", "sources")
COUNTS = os.path.join(ROOT, "tools", "catalog", "transformers_counts.json")
OUT = os.path.join(ROOT, "preflight", "models", "catalog.json")
HAND = "hand_entered.json"

#: config.json keys that describe the file, not the model's shape: left out of the catalogue
METADATA = {"_name_or_path", "auto_map", "transformers_version", "torch_dtype",
            "dtype", "quantization_config", "model_type", "task_specific_params", "use_cache",
            "_attn_implementation_autoset"}
DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
#: the loading class transformers is asked for, per head, and the classes tried after it
AUTO = {"causal_lm": ["AutoModelForCausalLM", "AutoModelForImageTextToText"],
        "masked_lm": ["AutoModelForMaskedLM"], "seq2seq_lm": ["AutoModelForSeq2SeqLM"],
        "base": ["AutoModel"], "seq_cls": ["AutoModelForSequenceClassification"],
        "token_cls": ["AutoModelForTokenClassification"]}
#: architectures without a formula whose default head is not the causal LM
ENCODERS = {"modernbert": "masked_lm", "distilbert": "masked_lm", "deberta-v2": "masked_lm",
            "xlm-roberta": "masked_lm", "electra": "masked_lm"}

ABOUT = ("Offline model catalogue, built by tools/build_catalog.py from the configs recorded "
         "under tools/catalog/sources/ (do not edit by hand): for each checkpoint, the "
         "config.json fields (Hugging Face names) that fix its shape, where the config was read "
         "(source, read date, revision when known) and the hub ids that share it (aliases). "
         "Parameter counts are computed from the config by preflight.models.formulas, never "
         "stored; 'checked' records the count transformers builds from the same config on the "
         "meta device, which the formula's equals. checkpoint_dtype: the dtype the published "
         "weights are stored in (config.json torch_dtype), which transformers >= 5 loads by "
         "default; absent where not recorded or where the checkpoint is stored quantized.")


# --------------------------------------------------------------------------- reading sources

def _arch(rec: dict) -> str:
    if rec.get("arch"):
        return rec["arch"]
    cfg = rec["config"]
    mt = str(cfg.get("model_type") or "").lower()
    if not mt:
        return formulas.arch_of_config(cfg) or ""
    return formulas.normalise_arch(mt) or mt   # an unknown model_type is kept as it is


def _dtype(cfg: dict) -> Optional[str]:
    if cfg.get("quantization_config"):
        return None                       # stored quantized (FP8, MXFP4): no float dtype
    for c in (cfg, cfg.get("text_config") or {}):
        d = DTYPES.get(str(c.get("torch_dtype") or c.get("dtype") or ""))
        if d:
            return d
    return None


def _source_text(src: dict, rec: dict) -> str:
    if "repository" not in src:
        return src["origin"]
    if "commit" not in src and "commit" not in rec:
        return rec["path"]            # a page's address, its revision in it (hub_pages.json)
    # a source gathering copies from many repositories names each record's own
    repo = (rec.get("repository") or src["repository"]).replace("https://github.com/", "")
    where = f"{repo}@{rec.get('commit') or src['commit']}:{rec['path']}"
    return where + (f" (preset {rec['preset']})" if rec.get("preset") else "")


def read_sources(folder: str = SOURCES) -> list[tuple[str, dict]]:
    """(file name, source) for every source file, the hand-entered one first."""
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    names.sort(key=lambda n: n != HAND)
    out = []
    for n in names:
        with open(os.path.join(folder, n), encoding="utf-8") as f:
            out.append((n, json.load(f)))
    return out


#: hub repositories renamed by their owners (the old id redirects to the new one)
RENAMED = (("meta-llama/meta-llama-3.1-", "meta-llama/llama-3.1-"),)


def _ids(names: list[str]) -> set[str]:
    """The lower-cased names, with their new names where the hub renamed them."""
    out = {n.lower() for n in names}
    for old, new in RENAMED:
        out |= {new + n[len(old):] for n in out if n.startswith(old)}
    return out


def _keys(entry: dict) -> set[str]:
    return _ids([entry["name"], *entry["aliases"]])


def _formula(arch: str, cfg: dict, head: Optional[str] = None
             ) -> tuple[Optional[int], Optional[str], str]:
    """(count, head, "") from preflight's formula; (None, None, why) without one."""
    if formulas.normalise_arch(arch) is None:
        return None, None, "no preflight formula"
    try:
        shape = formulas.count(arch, cfg, head=head)
    except (UnsupportedArchitecture, KeyError, ValueError, TypeError) as e:
        return None, None, f"the formula cannot read the config: {e}"
    return shape.params, shape.head, ""


def _rank(fname: str, src: dict) -> int:
    """Which config wins for one model: read verbatim (2) over transcribed (1) over the
    hand-entered catalogue (0)."""
    if fname == HAND:
        return 0
    return 1 if src.get("kind") == "transcribed" else 2


def _entry(fname: str, src: dict, rec: dict) -> dict:
    hand = fname == HAND
    cfg = {k: v for k, v in rec["config"].items() if k not in METADATA}
    new = {"name": rec["id"], "arch": _arch(rec), "config": cfg,
           "aliases": list(rec.get("aliases") or []),
           "checkpoint_dtype": rec.get("checkpoint_dtype") if hand else _dtype(rec["config"]),
           "source": _source_text(src, rec), "read": src.get("read"),
           "_rank": _rank(fname, src), "_quantized": bool(rec["config"].get("quantization_config"))}
    if rec.get("revision"):
        new["revision"] = rec["revision"]
    return new


def _merge(old: dict, new: dict) -> None:
    """`new` describes the same model as `old`: the higher-ranked config is kept, every
    name is kept (the first name stays the entry's name)."""
    names = [old["name"], *old["aliases"], new["name"], *new["aliases"]]
    if new["name"].lower() in _ids([old["name"]]) - {old["name"].lower()}:
        names.insert(0, new["name"])      # the hub's current name for a renamed repository
    if new["_rank"] > old["_rank"]:
        dtype = new["checkpoint_dtype"] if (new["checkpoint_dtype"] or new["_quantized"]) \
            else old["checkpoint_dtype"]
        old.update({k: v for k, v in new.items() if k not in ("name", "aliases")},
                   checkpoint_dtype=dtype)
    old["name"] = names[0]
    seen: list[str] = []
    for n in names[1:]:
        if n.lower() != old["name"].lower() and n.lower() not in {x.lower() for x in seen}:
            seen.append(n)
    old["aliases"] = seen


def assemble(sources: list[tuple[str, dict]]) -> tuple[list[dict], list[str]]:
    """The catalogue's entries (before verification) and the notes on merging them: two
    records name the same model when one's id or alias is the other's (an alias without
    organisation matching the name's last part); when their counts differ, the
    higher-ranked config is kept and the conflict noted."""
    entries: list[dict] = []
    notes: list[str] = []
    for fname, src in sources:
        for rec in src["models"]:
            if rec.get("left_out"):
                # recorded with the reason it is not the checkpoint's config.json
                notes.append(f"left out: {rec['id']} in {_source_text(src, rec)}: "
                             f"{rec['left_out']}")
                continue
            new = _entry(fname, src, rec)
            ids = _ids([rec["id"], *new["aliases"]])
            ids |= {i.rsplit("/", 1)[-1] for i in ids}
            same = [e for e in entries if _keys(e) & ids]
            if not same:
                entries.append(new)
                continue
            old = same[0]
            a = _formula(old["arch"], old["config"])[0]
            b = _formula(new["arch"], new["config"])[0]
            if old["arch"] != new["arch"] or a != b:
                keep, drop = (new, old) if new["_rank"] > old["_rank"] else (old, new)
                notes.append(f"conflict: {new['name']} is {b} ({new['arch']}) in {new['source']}, "
                             f"{old['name']} {a} ({old['arch']}) in {old['source']}: "
                             f"kept {keep['source']}")
            _merge(old, new)
    return entries, notes


# --------------------------------------------------------------------------- counting

def digest(arch: str, cfg: dict) -> str:
    text = json.dumps([arch, cfg], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def default_head(arch: str) -> str:
    if formulas.normalise_arch(arch):
        return formulas.default_head(formulas.normalise_arch(arch))
    return ENCODERS.get(arch, "causal_lm")


def transformers_count(arch: str, cfg: dict, head: str, classes: list[str]) -> dict:
    """{params, class, head} as transformers builds `arch` from `cfg` on the meta device (the
    checkpoint's own class from `classes` when transformers has it, else the auto class of
    `head`), or {error, head}. A decoder's `*ForConditionalGeneration` (vision tower and
    language model) counts as the causal-LM head."""
    import copy             # function-local, as the two below
    import logging          # function-local: transformers and torch are test-time only

    import torch
    import transformers
    logging.getLogger("transformers").setLevel(logging.ERROR)
    try:   # a copy: transformers rewrites nested dicts (rope_scaling) of what it is given
        config = transformers.AutoConfig.for_model(arch, **copy.deepcopy(cfg))
    except Exception as e:                       # noqa: BLE001 — reported, not raised
        return {"error": f"AutoConfig: {type(e).__name__}: {e}"[:300]}
    if head == "seq2seq_lm" and not getattr(config, "is_encoder_decoder", False):
        head = "causal_lm"        # a decoder's *ForConditionalGeneration: an LM with a vision tower
    last = ""
    own = [c for c in classes if hasattr(transformers, c)]
    for auto in own + [a for a in AUTO[head] if a not in own]:
        try:
            with torch.device("meta"):
                cls = getattr(transformers, auto)
                model = cls.from_config(config) if auto.startswith("Auto") else cls(config)
        except Exception as e:                   # noqa: BLE001
            last = f"{auto}: {type(e).__name__}: {e}"[:300]
            continue
        return {"params": sum(p.numel() for p in model.parameters()),
                "class": type(model).__name__, "head": head}
    return {"error": last, "head": head}


def update_counts(entries: list[dict], record: dict, *, recount: bool = False) -> int:
    """Count with transformers every entry whose config is new or changed; returns how many."""
    import transformers     # function-local: test-time only; ImportError means --offline
    n = 0
    for e in entries:
        key, d = e["name"], digest(e["arch"], e["config"])
        if not recount and record.get(key, {}).get("digest") == d:
            continue
        classes = list(e["config"].get("architectures") or [])[:1]
        head = (formulas.head_of_class(classes[0]) if classes else None) or default_head(e["arch"])
        got = transformers_count(e["arch"], e["config"], head, classes)
        record[key] = {"digest": d, "transformers": transformers.__version__, **got}
        n += 1
        print(f"  counted {key}: {got.get('params', got.get('error'))}", file=sys.stderr)
    for key in [k for k in record if k not in {e["name"] for e in entries}]:
        del record[key]
    return n


def formula_for(e: dict, rec: dict) -> tuple[Optional[int], Optional[str], str]:
    """preflight's count of entry `e` for the class transformers built (`rec`, its record):
    (count, head, "") or (None, None, why). A `*ForConditionalGeneration` of a decoder is
    recorded as the causal-LM head; where the formula tells that class apart (Llama 4: the
    text decoder for the causal LM, the vision tower and the decoder for the image-text
    class), the image-text count is the one that equals it."""
    mine, head, why = _formula(e["arch"], e["config"], rec.get("head"))
    if (mine is not None and rec.get("params") is not None and mine != rec["params"]
            and str(rec.get("class", "")).endswith("ForConditionalGeneration")):
        mine, head, why = _formula(e["arch"], e["config"], "seq2seq_lm")
    return mine, head, why


def verify(entries: list[dict], record: dict) -> tuple[list[dict], dict[str, list[str]]]:
    """The entries to write (each with its check), and the report by outcome."""
    out, report = [], {"verified": [], "not yet verified": [], "mismatch": []}
    for e in entries:
        rec = record.get(e["name"]) or {}
        current = rec.get("digest") == digest(e["arch"], e["config"])
        mine, head, why = formula_for(e, rec if current else {})
        theirs = rec.get("params") if current else None
        if why.startswith("the formula cannot"):
            report["mismatch"].append(f"{e['name']}: {why}")
            continue
        if mine is not None and theirs is not None:
            if mine != theirs:
                report["mismatch"].append(f"{e['name']} ({e['arch']}): formula {mine:,}, "
                                          f"transformers {theirs:,}")
                continue
            e = {**e, "checked": {"params": theirs, "transformers": rec["transformers"],
                                  "class": rec["class"]}}
            report["verified"].append(e["name"])
        elif mine is None:
            report["not yet verified"].append(f"{e['name']} ({e['arch']}): {why}")
        else:
            got = rec.get("error") if current else "no transformers count recorded"
            report["not yet verified"].append(f"{e['name']} ({e['arch']}): {got}")
        out.append(e)
    return out, report


# --------------------------------------------------------------------------- output

def _clean(e: dict) -> dict:
    out = {k: v for k, v in e.items() if v not in (None, [], "") and not k.startswith("_")}
    out.setdefault("aliases", [])
    return out


def render(entries: list[dict]) -> str:
    models = sorted((_clean(e) for e in entries), key=lambda e: (e["name"].lower(), e["name"]))
    return json.dumps({"about": ABOUT, "models": models}, indent=1, sort_keys=True,
                      ensure_ascii=False) + "\n"


def load_record(path: str = COUNTS) -> dict:
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def build(*, offline: bool = True, recount: bool = False) -> tuple[str, dict, list[str], dict]:
    """(catalog.json text, the report, merge notes, the transformers record)."""
    entries, notes = assemble(read_sources())
    record = load_record()
    if not offline:
        update_counts(entries, record, recount=recount)
    kept, report = verify(entries, record)
    return render(kept), report, notes, record


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--offline", action="store_true", help="use the recorded counts only")
    ap.add_argument("--recount", action="store_true", help="count every entry again")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when catalog.json differs from the build")
    args = ap.parse_args(argv)
    offline = args.offline or args.check
    if not offline:
        try:
            import transformers  # noqa: F401 — function-local: only to know whether to count
        except ImportError:
            print("transformers is not installed: using the recorded counts", file=sys.stderr)
            offline = True
    text, report, notes, record = build(offline=offline, recount=args.recount)
    for n in notes:
        print(n)
    for what in ("verified", "not yet verified", "mismatch"):
        print(f"{what}: {len(report[what])}")
        if what != "verified":
            for line in report[what]:
                print(f"  {line}")
    primaries = len(json.loads(text)["models"])
    print(f"{primaries} entries")
    if args.check:
        with open(OUT, encoding="utf-8") as f:
            same = f.read() == text
        print("catalog.json is up to date" if same else "catalog.json differs from the build")
        return 0 if same else 1
    if not offline:
        with open(COUNTS, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.write("\n")
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    return 1 if report["mismatch"] else 0


if __name__ == "__main__":
    sys.exit(main())
