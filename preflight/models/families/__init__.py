"""The parameter formulas, one module per architecture family.

Each family module walks the module tree the transformers implementation builds
(embeddings, every linear with its bias, every norm, the head) and adds up its
parameters with `models.shape._Count`; `models.formulas.count` picks the module for an
architecture. A new architecture's formula goes in its family's module (a new module for a
new family, registered in `models.formulas`).
"""
