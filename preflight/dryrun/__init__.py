"""The one-step dry run: the only part of preflight that runs user code."""
