"""preflight — a static pre-flight checker for PyTorch training jobs."""

__version__ = "0.1.0"
