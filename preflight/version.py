"""The version and the distribution's name: what the cache keys, the reports and the dry
run's child name. Imports nothing, so every layer can read it (the package's `__init__`
imports the API lazily and must not be imported from inside the package)."""

__version__ = "0.1.0"

#: The distribution's name on the package index (`pip install preflight-lint`); the import
#: package and the command are `preflight`.
DISTRIBUTION = "preflight-lint"
