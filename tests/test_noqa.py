"""`# noqa`: one parser, the same meaning in Python, shell and YAML files."""

import pytest

from preflight.engine import NoqaIndex
from preflight.extract import extract_file
from preflight.noqa import noqa_codes, noqa_lines
from preflight.plan import Diagnostic

FILES = {
    "train.py": "import torch\nmodel = torch.nn.Linear(4, 4)  # noqa: PF101 PF102\n",
    "launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py  # noqa: PF101 PF102\n",
    "recipe.yaml": "base_model: gpt2\nmicro_batch_size: 4  # noqa: PF101 PF102\n",
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_space_separated_codes_suppress_both_in_every_file_kind(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(FILES[name])
    index = NoqaIndex()
    ext = extract_file(name)
    if ext is not None:
        index.add_extraction(ext)
    kept = [c for c in ("PF101", "PF102", "PF107")
            if not index.suppresses(Diagnostic(code=c, message="m", path=name, line=2, col=1))]
    assert kept == ["PF107"]


def test_noqa_spellings():
    assert noqa_codes("x = 1  # noqa: PF101, PF102") == ["PF101", "PF102"]
    assert noqa_codes("x = 1  # noqa:PF101 PF2") == ["PF101", "PF2"]
    assert noqa_codes("x = 1  # NOQA") == []
    assert noqa_codes("x = 1") is None
    assert noqa_lines("a\nb  # noqa: PF101 PF102\n") == {2: ["PF101", "PF102"]}
