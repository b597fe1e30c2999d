"""Report writers: text, json, sarif, github, markdown."""
