"""Lower ``return``, ``break`` and ``continue`` to boolean flags (a pure AST rewrite).

Functional control flow has one exit per construct, so jumps become flags:

* ``break`` in loop L sets ``ag__break_L = True``; L's test (``while``) or extra
  test (``for``) also checks ``not ag__break_L``; a loop ``else`` runs under
  ``if not ag__break_L``;
* ``continue`` sets ``ag__cont_L = True``, reset at the top of each iteration;
* ``return v`` (when any ``return`` is nested in a compound statement) sets
  ``ag__retval = v`` and ``ag__do_return = True`` and stops every enclosing loop;
  the function ends with one ``return``.

Statements after a statement that may set a flag run under ``if not flag:``.
The result is still plain Python with the original meaning; the control-flow
rewrite then turns these ``if``s into conditionals when a flag is traced.
"""
from __future__ import annotations

import ast
import itertools

RETVAL = "ag__retval"
DO_RETURN = "ag__do_return"
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _assign(id_: str, value: ast.expr, like: ast.AST) -> ast.Assign:
    return ast.copy_location(ast.Assign(targets=[_name(id_, True)], value=value), like)


def _not_any(flags: list[str]) -> ast.expr:
    """``not f1 and not f2 ...``."""
    nots = [ast.UnaryOp(op=ast.Not(), operand=_name(f)) for f in flags]
    return nots[0] if len(nots) == 1 else ast.BoolOp(op=ast.And(), values=nots)


def _has_nested_return(fn: ast.FunctionDef) -> bool:
    """A ``return`` inside a compound statement, or one that is not the last statement."""
    for i, s in enumerate(fn.body):
        if isinstance(s, ast.Return):
            if i != len(fn.body) - 1:
                return True
            continue
        if any(isinstance(n, ast.Return) for n in _walk_scope(s)):
            return True
    return False


def _walk_scope(node: ast.AST):
    """``ast.walk`` that does not enter nested function or class scopes."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, _SCOPES):
                stack.append(c)


def always_returns(stmts: list[ast.stmt]) -> bool:
    """Every path through ``stmts`` ends in ``return`` or ``raise`` (conservative)."""
    for s in stmts:
        if isinstance(s, (ast.Return, ast.Raise)):
            return True
        if isinstance(s, ast.If) and always_returns(s.body) and always_returns(s.orelse):
            return True
    return False


def always_jumps(stmts: list[ast.stmt]) -> bool:
    """Every path through ``stmts`` ends in ``return``/``break``/``continue``/``raise``."""
    for s in stmts:
        if isinstance(s, (ast.Return, ast.Break, ast.Continue, ast.Raise)):
            return True
        if isinstance(s, ast.If) and always_jumps(s.body) and always_jumps(s.orelse):
            return True
    return False


def _jumping_side(s: ast.stmt) -> str | None:
    """For an ``if`` where one branch always jumps and the other sets no flag, that
    branch's name: the statements after the ``if`` can join the other branch."""
    if not isinstance(s, ast.If) or not hasattr(s, "ag_jumps"):
        return None
    (jb, je), (fb, fe) = s.ag_jumps, s.ag_flags
    if jb and not fe:
        return "body"
    if je and not fb:
        return "orelse"
    return None


class JumpLowering:
    """Rewrites one function body in place; ``lowered_returns`` tells whether the
    function now ends in ``return ag__retval``."""

    def __init__(self):
        self._ids = itertools.count(1)
        self.lowered_returns = False
        self.always_returns = True

    def run(self, fn: ast.FunctionDef) -> None:
        lower_ret = _has_nested_return(fn)
        self.lowered_returns = lower_ret
        self.always_returns = always_returns(fn.body)
        env = {"ret": lower_ret, "brk": None, "cont": None}
        body, _ = self._block(fn.body, env)
        if lower_ret:
            first = fn.body[0]
            init = [_assign(DO_RETURN, ast.Constant(False), first),
                    _assign(RETVAL, _undefined("the return value"), first)]
            last = fn.body[-1]
            end = ast.copy_location(ast.Return(value=_name(RETVAL)), last)
            body = init + body + [end]
        fn.body = body or [ast.Pass()]

    # -- blocks -------------------------------------------------------------------
    def _block(self, stmts: list[ast.stmt], env: dict) -> tuple[list[ast.stmt], set[str]]:
        out: list[ast.stmt] = []
        flags: set[str] = set()
        for i, s in enumerate(stmts):
            new, f = self._stmt(s, env)
            out.extend(new)
            flags |= f
            if f and i + 1 < len(stmts):
                rest, f_rest = self._block(stmts[i + 1:], env)
                side = _jumping_side(s)
                if side is not None:    # `if c: break` + rest -> `if c: flag else: rest`
                    other = "orelse" if side == "body" else "body"
                    setattr(s, other, [x for x in getattr(s, other)
                                       if not isinstance(x, ast.Pass)] + rest)
                    return out, flags | f_rest
                if rest:
                    guard = ast.If(test=_not_any(sorted(f)), body=rest, orelse=[])
                    out.append(ast.copy_location(guard, stmts[i + 1]))
                return out, flags | f_rest
        return out, flags

    def _stmt(self, s: ast.stmt, env: dict) -> tuple[list[ast.stmt], set[str]]:
        if isinstance(s, ast.Return) and env["ret"]:
            value = s.value if s.value is not None else ast.Constant(None)
            return [_assign(RETVAL, value, s), _assign(DO_RETURN, ast.Constant(True), s)], \
                {DO_RETURN}
        if isinstance(s, ast.Break) and env["brk"]:
            return [_assign(env["brk"], ast.Constant(True), s)], {env["brk"]}
        if isinstance(s, ast.Continue) and env["cont"]:
            return [_assign(env["cont"], ast.Constant(True), s)], {env["cont"]}
        if isinstance(s, ast.If):
            s.ag_jumps = (always_jumps(s.body), always_jumps(s.orelse))
            body, f1 = self._block(s.body, env)
            orelse, f2 = self._block(s.orelse, env)
            s.ag_flags = (f1, f2)
            s.body, s.orelse = body or [ast.copy_location(ast.Pass(), s)], orelse
            return [s], f1 | f2
        if isinstance(s, (ast.While, ast.For)):
            return self._loop(s, env)
        if isinstance(s, (ast.Try, ast.With)) or type(s).__name__ == "TryStar":
            flags: set[str] = set()
            for name in ("body", "orelse", "finalbody"):
                block = getattr(s, name, None)
                if block:
                    new, f = self._block(block, env)
                    setattr(s, name, new or [ast.Pass()])
                    flags |= f
            for h in getattr(s, "handlers", []):
                h.body, f = self._block(h.body, env)
                h.body = h.body or [ast.Pass()]
                flags |= f
            return [s], flags
        return [s], set()

    def _loop(self, s, env: dict) -> tuple[list[ast.stmt], set[str]]:
        k = next(self._ids)
        brk, cont = f"ag__break_{k}", f"ag__cont_{k}"
        inner = {"ret": env["ret"], "brk": brk, "cont": cont}
        body, f = self._block(s.body, inner)
        if cont in f:
            body = [_assign(cont, ast.Constant(False), s.body[0])] + body
        s.body = body or [ast.copy_location(ast.Pass(), s)]
        pre: list[ast.stmt] = []
        exits = sorted(f & {brk, DO_RETURN})
        if brk in f:
            pre.append(_assign(brk, ast.Constant(False), s))
        if exits:
            if isinstance(s, ast.While):
                s.test = ast.BoolOp(op=ast.And(), values=[_not_any(exits), s.test])
            else:
                s.ag_extra_test = _not_any(exits)
        post: list[ast.stmt] = []
        outer_flags = f - {brk, cont}
        if s.orelse:
            orelse, fe = self._block(s.orelse, env)
            s.orelse = []
            if exits and orelse:
                orelse = [ast.copy_location(ast.If(test=_not_any(exits), body=orelse,
                                                   orelse=[]), orelse[0])]
            post = orelse
            outer_flags |= fe
        return pre + [s] + post, outer_flags


def _undefined(what: str) -> ast.expr:
    return ast.Call(func=ast.Attribute(value=_name("ag__"), attr="Undefined", ctx=ast.Load()),
                    args=[ast.Constant(what)], keywords=[])
