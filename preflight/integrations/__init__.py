"""Pre-flight checks inside a running training job, at the moment every fact is exact.

    from preflight.integrations.transformers import PreflightCallback   # HF Trainer, TRL
    from preflight.integrations.lightning import PreflightCallback      # Lightning

Each callback reads the live model, the training arguments, the distributed state and the
device's capacity when training begins, sizes the job with the same estimator and rules as
`preflight check`, logs the ledger, and — before the first optimizer step — raises
`WillNotFit` (or only warns, `on_will_not_fit="warn"`) when the job will not fit.

Neither module imports its framework until it is used; preflight depends on neither.
"""

from preflight.integrations.runtime import RuntimeCheck, WillNotFit

__all__ = ["RuntimeCheck", "WillNotFit"]
