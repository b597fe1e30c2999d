"""Every spelling the writer uses is read back by the extractor as the value it stands for
(one owner per spelling: the writer chooses among the reader's own tables)."""

import pytest

from preflight.facts.spellings import ATTENTIONS as ATTN
from preflight.facts.spellings import OPTIMIZER_NAMES as OPTIM_STRINGS
from preflight.facts.spellings import fsdp_strategy
from preflight.fix.spelling import ACCELERATE_FSDP, HF_ATTN, HF_OPTIM, render


@pytest.mark.parametrize("fact,spelled", sorted(HF_OPTIM.items()))
def test_optim_strings_round_trip(fact, spelled):
    assert OPTIM_STRINGS[spelled] == fact


@pytest.mark.parametrize("fact,spelled", sorted(HF_ATTN.items()))
def test_attention_round_trips(fact, spelled):
    assert ATTN[spelled] == fact


@pytest.mark.parametrize("fact,spelled", sorted(ACCELERATE_FSDP.items()))
def test_fsdp_strategies_round_trip(fact, spelled):
    assert fsdp_strategy(spelled) == fact


def test_training_arguments_fsdp_keeps_the_other_words():
    assert render("fsdp", "full_shard", "fsdp", "shard_grad_op auto_wrap offload") == \
        "full_shard auto_wrap offload"
    assert render("fsdp", "shard_grad_op", "--fsdp", "") == "shard_grad_op auto_wrap"


def test_values_a_key_cannot_say_are_none():
    assert render("activation_checkpointing", "selective", "gradient_checkpointing") is None
    assert render("optimizer", "adamw_8bit", "learning_rate") is None
    assert render("micro_batch", True, "per_device_train_batch_size") is None
    assert render("micro_batch", 4, "batch_size", "8") == "4"
    assert render("micro_batch", 4, "batch_size", 8) == 4
