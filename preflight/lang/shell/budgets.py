"""The shell reader's budgets, in one place: however a launch script is written (thousands
of repeated command lines, continuation lines, here-documents, a variable that doubles on
every line), reading it ends in time linear in its text. A budget spent leaves what it
would have read unknown, with the reason, and the reader says so once (`State.spent`).
"""

#: logical lines and simple commands read per script, the files it sources, the `eval`s in
#: it and each reading of a loop's body or a function's included
MAX_COMMANDS = 40_000
#: characters one expanded line may hold (`A="$A$A"` doubles a value on every line)
MAX_EXPANDED = 256_000
#: elements one array expansion may give (a launcher's hosts, GPUs, flags).
#: Each word is an object of its own: `A=("${A[@]}" "${A[@]}")` line after line, kept
#: under MAX_EXPANDED by characters alone, still cost 100,000 words a line
MAX_WORDS = 256
#: `eval` inside `eval`, files `source`d inside sourced files
MAX_EVAL_DEPTH = 8
MAX_SOURCE_DEPTH = 4
#: values of one `for NAME in …` loop whose body is read once per value; a longer list (or
#: one not known statically) leaves NAME unknown with the values it may take
MAX_LOOP_VALUES = 8
#: physical lines one logical line may join (continuations, a multi-line array or string)
MAX_JOINED = 4_000
#: lines of the body of a loop kept to be read again for its next value
MAX_LOOP_BODY = 400
