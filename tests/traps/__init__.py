"""The trap corpus: small jobs with known right answers (cases.json) and their runner."""
