"""The static evaluator's budgets, in one place: however a script is written, reading it
ends in bounded time and memory. A budget spent leaves the values it would have computed
unknown, with the reason; the budgets of arithmetic and formatting themselves are
`preflight.lang.bounded`'s.
"""

#: calls inlined inside one another (a deeper call is an unknown result)
MAX_DEPTH = 12
#: a function running inside itself, with every argument known (a config loader reading
#: its `base:` file first): deeper, and with any argument not known, the call is unknown
MAX_RECURSION = 4
#: such re-entries of one function per script (a recursion over every node of a nested
#: dict would otherwise spend the statement budget the training code needs)
MAX_RECURSIVE_CALLS = 16
#: statements and expressions evaluated per file, the modules followed into included
MAX_STEPS = 200_000
MAX_MODULES = 8          # other modules of the repository read per script
MAX_FOLLOWED = 32        # calls followed into them per script
#: calls of one function of another module followed per script: a helper called in
#: every line (`print0(...)`) does not spend the budget of the calls that matter
MAX_SAME_FOLLOWED = 3
MODULE_SEARCH_UP = 2     # folders above the script searched for top-level imports
#: a larger module of the repository is not read when a call leads into it
MAX_MODULE_BYTES = 512_000
#: source quoted in a reason is cut after this many characters
SRC_LIMIT = 200
