"""What a report can fail on before it is written: the one error type of the report
stage, imported by the pieces that raise it (the changed-files filter, the memory changes
against a base) and by the command that catches it."""


class DiffBaseError(ValueError):
    """`--diff-base REF` could not be resolved (not a git repository, unknown ref)."""
