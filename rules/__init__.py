"""preflight's built-in rules, one per module."""
