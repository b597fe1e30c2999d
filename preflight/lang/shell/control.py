"""Control flow: `if` / `elif` / `else`, `case` and loops. A condition that can be decided
statically takes one branch; an undecidable one has each branch read from the same
starting variables, and a variable the branches set differently becomes unknown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from preflight.lang.shell import budgets
from preflight.lang.shell.values import Word, as_int, mark, reason_of, without_absent
from preflight.lang.shell.words import split_words

if TYPE_CHECKING:
    from preflight.lang.shell.reader import State


def cond_value(words: list[Word]) -> Optional[bool]:
    """Three-valued truth of an `if` condition: `[ … ]`, `[[ … ]]`, `test …` joined by && / ||."""
    result: Optional[bool] = None
    op: Optional[str] = None
    cur: list[Word] = []

    def one(ws: list[Word]) -> Optional[bool]:
        neg = False
        while ws and ws[0].text == "!" and not ws[0].quoted:
            neg, ws = not neg, ws[1:]
        if not ws:
            return None
        if ws[0].text in ("[", "[[") and ws[-1].text in ("]", "]]"):
            ws = ws[1:-1]
        elif ws[0].text == "test":
            ws = ws[1:]
        else:
            return None
        t = []
        for w in ws:
            # an argument the script is not given tests as empty, as in the shell
            text = without_absent(w.text) if w.unknown else w.text
            if text is None:
                return None
            t.append(text)
        val: Optional[bool] = None
        if len(t) == 3 and t[1] in ("==", "=", "!="):
            val = (t[0] == t[2]) if t[1] != "!=" else (t[0] != t[2])
        elif len(t) == 3 and t[1] in ("-eq", "-ne", "-gt", "-lt", "-ge", "-le"):
            a, b = as_int(t[0]), as_int(t[2])
            if a is None or b is None:
                return None
            val = {"-eq": a == b, "-ne": a != b, "-gt": a > b, "-lt": a < b, "-ge": a >= b, "-le": a <= b}[t[1]]
        elif len(t) == 2 and t[0] in ("-z", "-n"):
            val = (t[1] == "") if t[0] == "-z" else (t[1] != "")
        elif len(t) == 1:
            val = t[0] != ""
        if val is None:
            return None
        return (not val) if neg else val

    for w in words + [Word("&&")]:
        if w.text in ("&&", "||") and not w.quoted:
            v = one(cur)
            cur = []
            if op is None:
                result = v
            elif op == "&&":
                result = False if (result is False or v is False) else (None if None in (result, v) else True)
            else:
                result = True if (result is True or v is True) else (None if None in (result, v) else False)
            op = w.text
        else:
            cur.append(w)
    return result


class Frame:
    """An open `if` / `case` / loop. `val`: truth of the branch being read (None = cannot be
    decided statically). Once a branch is undecidable, each branch is read from the same
    starting variables (`snap`) and at `fi`/`esac` a variable the branches set differently
    becomes unknown — never the value of whichever branch happened to come last."""

    __slots__ = ("kind", "val", "taken", "snap", "branches", "closed", "what", "subject")

    def __init__(self, kind: str, what: str = ""):
        self.kind, self.what = kind, what
        self.val: Optional[bool] = None
        self.taken = False
        self.snap: Optional[dict] = None
        self.branches: list[dict] = []
        self.closed = False
        self.subject: Optional[str] = None


def _copy_env(env: dict) -> dict:
    return {k: (list(v) if isinstance(v, list) else v) for k, v in env.items()}


def active(st: State) -> bool:
    return all(f.val is not False for f in st.frames)


def branch(st: State, fr: Frame, v: Optional[bool]) -> None:
    """Start the next branch of `fr` whose condition evaluates to `v`."""
    if fr.taken:
        fr.val = False
        return
    if fr.snap is None:
        if v is None and active_outer(st, fr):
            fr.snap = _copy_env(st.env)
            fr.val = None
        else:
            fr.val = v
            fr.taken = v is True
        return
    # undecidable mode: close the branch just read, restart from the snapshot
    if fr.val is None:
        fr.branches.append(_copy_env(st.env))
    st.env.clear()
    st.env.update(_copy_env(fr.snap))
    if fr.closed:
        fr.val = False
    elif v is True:
        fr.val, fr.closed = None, True      # taken unless an earlier undecidable branch was
    else:
        fr.val = v


def active_outer(st: State, fr: Frame) -> bool:
    return all(f.val is not False for f in st.frames if f is not fr)


def close(st: State, fr: Frame) -> None:
    if fr.snap is None:
        return
    if fr.val is None:
        fr.branches.append(_copy_env(st.env))
    if not fr.closed:
        fr.branches.append(_copy_env(fr.snap))
    merged: dict = {}
    names = set().union(*fr.branches) if fr.branches else set()
    for name in names:
        vals = [b.get(name) for b in fr.branches]
        if all(v == vals[0] for v in vals):
            if vals[0] is not None:
                merged[name] = vals[0]
        else:
            merged[name] = mark(f"${name} is set differently in the branches of `{fr.what}`"
                                + _alternatives(vals))
    st.env.clear()
    st.env.update(merged)


def _alternatives(vals: list) -> str:
    """The values a variable may hold after an undecidable block, for its reason: `: 4 or 8`
    (a branch that leaves it unset or unknown is `unset` / `?`)."""
    shown: list[str] = []
    for v in vals:
        t = "unset" if v is None else ("?" if not isinstance(v, str) or reason_of(v) else repr(v)
                                       if len(v) <= 40 else repr(v[:40] + "…"))
        if t not in shown:
            shown.append(t)
    return ": " + " or ".join(shown[:4]) + (" or …" if len(shown) > 4 else "")


def _pattern_split(raw: str) -> Optional[tuple[str, str]]:
    """`  (a|b) rest` / `a|b) rest` → ("a|b", " rest"): the pattern is what precedes the
    first `)` (with no `(` inside it but an optional leading one). One scan, no regex
    backtracking over long runs of blanks."""
    body = raw.lstrip()
    if body.startswith("("):
        body = body[1:]
    j = body.find(")")
    if j < 0 or "(" in body[:j]:
        return None
    return body[:j].strip(), body[j + 1:]


def case_pattern(st: State, raw: str, lineno: int) -> Optional[str]:
    """In a `case`, a `pattern)` line starts a branch; returns the rest of the line."""
    if not st.frames or st.frames[-1].kind != "case":
        return None
    m = _pattern_split(raw)
    if not m or m[0].startswith("#") or m[0] in ("", "esac"):
        return None
    fr = st.frames[-1]
    alts = [w.text for w in split_words(m[0].replace("|", " "), st.env, lineno, st.positional)]
    subject = fr.subject if fr.subject is None or reason_of(fr.subject) is None else without_absent(fr.subject)
    if subject is None:
        v: Optional[bool] = True if any(a == "*" for a in alts) else None
    else:
        import fnmatch
        v = any(fnmatch.fnmatchcase(subject, a) for a in alts)
    branch(st, fr, v)
    return m[1]



def open_loop(st: State, kw: str, cond: list[Word], lineno: int) -> None:
    """A `while` / `until` / `for` / `select` loop starts. A loop whose body cannot run
    (`while [ $# -gt 0 ]` in a script run without arguments, `for x in ;`) is not read; one
    that may run none or several times is read once, like an undecidable `if` with an empty
    `else`: a variable its body changes is unknown after it. A `for NAME in …` body is read
    with NAME set: the value when the list has one, else unknown with the values it takes
    (each is a run of its own; a fact that depends on NAME is not one number)."""
    fr = Frame("loop", f"{kw} … (line {lineno})")
    st.frames.append(fr)
    if not active_outer(st, fr):
        fr.val = False
        return
    if kw in ("while", "until"):
        v = cond_value(cond)
        if v is not None and kw == "until":
            v = not v
        if v is False:
            fr.val = False
        else:
            branch(st, fr, None)
        return
    name = cond[0].text if kw == "for" and cond and not cond[0].text.startswith("((") else None
    if name is None or not name.isidentifier():
        branch(st, fr, None)
        return
    if len(cond) > 1 and cond[1].text == "in" and not cond[1].quoted:
        values: Optional[list[Word]] = cond[2:]
    elif len(cond) == 1:
        at = st.positional.get("@")
        values = [Word(v) for v in at] if isinstance(at, list) else None
    else:
        values = None
    if values is not None and not values:
        fr.val = False              # an empty list: the body never runs
        return
    branch(st, fr, None)
    texts = [w.text for w in values or []]
    if values is None or any(w.unknown for w in values):
        st.env[name] = mark(f"${name} is each value of the loop at line {lineno}, not all known "
                            "statically")
    elif len(set(texts)) == 1:
        st.env[name] = texts[0]
    else:
        shown = ", ".join(texts[:budgets.MAX_LOOP_VALUES]) + (", …" if len(texts) > budgets.MAX_LOOP_VALUES else "")
        st.env[name] = mark(f"${name} takes each of {shown} in the loop at line {lineno}: "
                            "one run per value")
