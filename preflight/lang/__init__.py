"""The configuration languages preflight reads without running them."""
