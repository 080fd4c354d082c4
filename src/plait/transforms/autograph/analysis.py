"""Static analysis of a function's AST for the autograph rewrite.

Three facts per control-flow statement, computed on the tree after jumps were
lowered to flags (so every ``if``/``while``/``for`` has one entry and one exit):

* the names it *assigns* in the function's own scope (nested ``def``/``lambda``
  and comprehension scopes excluded);
* the names *live* after it (read later before being reassigned) and, for a
  loop, the names live at the loop head — together these give the phi values of
  an ``if`` and the loop-carried values of a loop (the Julia paper, section 5.2);
* the names *bound* (definitely / possibly) before it, so the rewrite knows which
  inputs may still be unassigned Python locals.

Results live in an :class:`Analysis` keyed by AST node.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


# ---------------------------------------------------------------------------
# Names read and assigned

def _target_names(t: ast.AST) -> set[str]:
    """Names bound by an assignment target (``a``, ``(a, b)``, ``[a, *b]``)."""
    if isinstance(t, ast.Name):
        return {t.id}
    if isinstance(t, (ast.Tuple, ast.List)):
        out: set[str] = set()
        for e in t.elts:
            out |= _target_names(e)
        return out
    if isinstance(t, ast.Starred):
        return _target_names(t.value)
    return set()


def reads(node: ast.AST | None) -> set[str]:
    """Names an expression or statement reads from the enclosing function's scope.

    Free names of nested lambdas, functions and comprehensions count as read (they
    are evaluated at definition time or later), their own parameters do not.
    """
    out: set[str] = set()
    if node is not None:
        _Reads(out).visit(node)
    return out


class _Reads(ast.NodeVisitor):
    def __init__(self, out: set[str]):
        self.out = out

    def visit_Name(self, n: ast.Name):
        if isinstance(n.ctx, ast.Load):
            self.out.add(n.id)

    def visit_AugAssign(self, n: ast.AugAssign):
        self.out |= _target_names(n.target)
        self.generic_visit(n)

    def _inner(self, body_nodes, bound: set[str], outer_nodes=()):
        for x in outer_nodes:
            self.visit(x)
        inner: set[str] = set()
        for b in body_nodes:
            _Reads(inner).visit(b)
        local = set(bound)
        for b in body_nodes:
            local |= assigned(b) if isinstance(b, ast.stmt) else set()
        self.out |= inner - local

    @staticmethod
    def _params(args: ast.arguments) -> tuple[set[str], list]:
        names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        for a in (args.vararg, args.kwarg):
            if a is not None:
                names.add(a.arg)
        defaults = list(args.defaults) + [d for d in args.kw_defaults if d is not None]
        return names, defaults

    def visit_Lambda(self, n: ast.Lambda):
        params, defaults = self._params(n.args)
        self._inner([n.body], params, defaults)

    def visit_FunctionDef(self, n):
        params, defaults = self._params(n.args)
        self._inner(n.body, params, defaults + list(n.decorator_list))

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, n: ast.ClassDef):
        for x in n.bases + [k.value for k in n.keywords] + n.decorator_list:
            self.visit(x)
        self._inner(n.body, set())

    def _comp(self, n, elts):
        bound: set[str] = set()
        for g in n.generators:
            bound |= _target_names(g.target)
        self.visit(n.generators[0].iter)
        inner: set[str] = set()
        for g in n.generators:
            for part in [g.iter] + g.ifs:
                _Reads(inner).visit(part)
        for e in elts:
            _Reads(inner).visit(e)
        self.out |= inner - bound

    def visit_ListComp(self, n):
        self._comp(n, [n.elt])

    visit_SetComp = visit_ListComp
    visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, n):
        self._comp(n, [n.key, n.value])


def assigned(node: ast.AST) -> set[str]:
    """Names a statement (or list of statements) binds in the current scope."""
    out: set[str] = set()
    nodes = node if isinstance(node, list) else [node]
    for n in nodes:
        _Assigned(out).visit(n)
    return out


class _Assigned(ast.NodeVisitor):
    def __init__(self, out: set[str]):
        self.out = out

    def visit_Name(self, n: ast.Name):
        if isinstance(n.ctx, (ast.Store, ast.Del)):
            self.out.add(n.id)

    def visit_FunctionDef(self, n):
        self.out.add(n.name)
        for d in n.decorator_list + n.args.defaults:
            self.visit(d)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, n):
        self.out.add(n.name)

    def visit_Lambda(self, n):
        pass

    def visit_ListComp(self, n):
        for x in ast.walk(n):            # only walrus targets escape a comprehension
            if isinstance(x, ast.NamedExpr):
                self.out |= _target_names(x.target)

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    def visit_Import(self, n):
        for a in n.names:
            self.out.add((a.asname or a.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, n):
        if n.name:
            self.out.add(n.name)
        self.generic_visit(n)

    def visit_Global(self, n):
        pass

    visit_Nonlocal = visit_Global


_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
             "popitem", "add", "discard", "sort", "reverse"}


def mutated(stmts: list[ast.stmt]) -> set[str]:
    """Names whose object a block mutates in place: ``n.append(...)`` (and the other
    list/dict/set mutators) or ``n[i] = v`` / ``n[i] += v``."""
    out: set[str] = set()
    stack: list[ast.AST] = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, _SCOPES):
            continue
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                    f.value.id == "ag__" and f.attr == "call" and n.args:
                f = n.args[0]             # a call already routed through ag__.call
            if isinstance(f, ast.Attribute) and f.attr in _MUTATORS and \
                    isinstance(f.value, ast.Name):
                out.add(f.value.id)
        targets = n.targets if isinstance(n, ast.Assign) else \
            [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                out.add(t.value.id)
        stack.extend(ast.iter_child_nodes(n))
    return out


def declared_nonlocal(fn: ast.AST) -> set[str]:
    """Names declared ``global`` or ``nonlocal`` directly in a function body."""
    out: set[str] = set()
    stack = list(fn.body)
    while stack:
        s = stack.pop()
        if isinstance(s, (ast.Global, ast.Nonlocal)):
            out |= set(s.names)
        elif not isinstance(s, _SCOPES):
            stack.extend(c for c in ast.iter_child_nodes(s) if isinstance(c, ast.stmt))
    return out


def first_assignment_lines(stmts: list[ast.stmt]) -> dict[str, int]:
    """For each name assigned in ``stmts``, the first source line assigning it."""
    out: dict[str, int] = {}
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                ln = getattr(n, "lineno", 0)
                if n.id not in out or ln < out[n.id]:
                    out[n.id] = ln
    return out


# ---------------------------------------------------------------------------
# Liveness and bound names

@dataclass
class StmtFacts:
    """What the rewrite needs to know about one ``if``/``while``/``for``."""

    assigned: set[str] = field(default_factory=set)   # in this scope
    live_out: set[str] = field(default_factory=set)   # live after the statement
    live_head: set[str] = field(default_factory=set)  # loops: live at the loop head
    live_branches: set[str] = field(default_factory=set)  # if: live at a branch's entry
    bound: set[str] = field(default_factory=set)      # definitely bound before
    maybe_bound: set[str] = field(default_factory=set)  # possibly bound before


class Analysis:
    """Liveness and binding facts for the control-flow statements of one function."""

    def __init__(self, fn: ast.FunctionDef, excluded: set[str], params: set[str]):
        self.facts: dict[ast.AST, StmtFacts] = {}
        self.excluded = excluded          # global/nonlocal names: never phis or carries
        self.locals = (params | assigned(fn.body)) - excluded
        self._live_block(fn.body, set())

    def _changed(self, stmts: list[ast.stmt]) -> set[str]:
        """Local names a block assigns, or mutates in place (``xs.append(v)``,
        ``d[k] = v``): a mutated container is threaded through like an assigned one,
        so a list growing in a traced loop is caught as a structure change."""
        return (assigned(stmts) - self.excluded) | (mutated(stmts) & self.locals)

    def get(self, node: ast.AST) -> StmtFacts:
        f = self.facts.get(node)
        if f is None:
            f = self.facts[node] = StmtFacts()
        return f

    # -- backward: liveness ---------------------------------------------------------
    def _live_block(self, stmts: list[ast.stmt], live: set[str]) -> set[str]:
        for s in reversed(stmts):
            live = self._live_stmt(s, live)
        return live

    def _live_stmt(self, s: ast.stmt, out: set[str]) -> set[str]:
        if isinstance(s, ast.If):
            f = self.get(s)
            f.assigned = self._changed(s.body + s.orelse)
            f.live_out = set(out)
            body_in = self._live_block(s.body, out)
            else_in = self._live_block(s.orelse, out)
            f.live_branches = body_in | else_in
            return reads(s.test) | body_in | else_in
        if isinstance(s, ast.While):
            f = self.get(s)
            f.assigned = self._changed(s.body)
            f.live_out = set(out)
            after = self._live_block(s.orelse, out)
            head = reads(s.test) | after
            while True:
                new = reads(s.test) | after | self._live_block(s.body, head)
                if new == head:
                    break
                head = new
            f.live_head = head
            return head
        if isinstance(s, ast.For):
            f = self.get(s)
            tgt = _target_names(s.target)
            f.assigned = self._changed(s.body) | (tgt - self.excluded)
            f.live_out = set(out)
            after = self._live_block(s.orelse, out)
            extra = reads(getattr(s, "ag_extra_test", None))   # break/return flags
            head = after | extra
            while True:
                body_in = self._live_block(s.body, head)
                new = after | extra | (body_in - tgt) | (reads(s.target) - tgt)
                if new == head:
                    break
                head = new
            f.live_head = head
            return reads(s.iter) | head
        if isinstance(s, (ast.Return, ast.Raise)):
            return reads(s)
        if isinstance(s, (ast.Try, ast.With, ast.Match)) or hasattr(ast, "TryStar") and \
                isinstance(s, getattr(ast, "TryStar")):
            everything = reads(s) | out
            for block in _sub_blocks(s):
                self._live_block(block, everything)
            return everything
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            killed: set[str] = set()
            rd = reads(s.value) if s.value is not None else set()
            for t in targets:
                killed |= _target_names(t)
                rd |= reads(t)            # ``a[i] = v`` reads a and i; Store names excluded
            if isinstance(s, ast.AnnAssign) and s.value is None:
                return out | rd
            return (out - killed) | rd
        if isinstance(s, ast.AugAssign):
            return out | reads(s)
        if isinstance(s, ast.Delete):
            return (out - assigned(s)) | reads(s)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                          ast.Import, ast.ImportFrom)):
            return (out - assigned(s)) | reads(s)
        return out | reads(s)

    # -- forward: bound names -------------------------------------------------------
    def mark_bound(self, stmts: list[ast.stmt], bound: set[str], maybe: set[str]
                   ) -> tuple[set[str], set[str]]:
        """Record bound-before facts for control flow in ``stmts`` (one function scope
        whose parameters are ``bound``); return the sets after the block."""
        for s in stmts:
            bound, maybe = self._bound_stmt(s, bound, maybe)
        return bound, maybe

    def _bound_stmt(self, s, bound, maybe):
        f = self.facts.get(s)
        if f is not None:
            f.bound, f.maybe_bound = set(bound), set(maybe)
            ins = self.inputs(s)
            if isinstance(s, ast.If):
                for block in (s.body, s.orelse):
                    self.mark_bound(block, set(ins), set(ins))
                outs = self.outputs(s)
            else:
                self.mark_bound(s.body, set(ins) | (_target_names(s.target)
                                                    if isinstance(s, ast.For) else set()),
                                set(ins))
                outs = ins
            return bound | ins | outs, maybe | ins | outs
        if isinstance(s, (ast.Try, ast.With, ast.Match)) or type(s).__name__ == "TryStar":
            for block in _sub_blocks(s):
                self.mark_bound(block, set(bound), maybe | assigned(s))
            if isinstance(s, ast.With):
                return bound | assigned(s), maybe | assigned(s)
            return bound, maybe | assigned(s)
        if isinstance(s, ast.Delete):
            return bound - assigned(s), maybe
        a = assigned(s)
        return bound | a, maybe | a

    # -- derived sets -----------------------------------------------------------------
    def outputs(self, s: ast.stmt) -> set[str]:
        """``if``: the phi values. Loops: the loop-carried values."""
        f = self.facts[s]
        if isinstance(s, ast.If):
            return f.assigned & f.live_out
        return f.assigned & (f.live_head | f.live_out)

    def inputs(self, s: ast.stmt) -> set[str]:
        """Names passed into the generated branch/body functions as parameters."""
        f = self.facts[s]
        if isinstance(s, ast.If):
            return f.assigned & (f.live_out | f.live_branches)
        return self.outputs(s)


def _sub_blocks(s: ast.stmt) -> list[list[ast.stmt]]:
    blocks = []
    for name in ("body", "orelse", "finalbody"):
        b = getattr(s, name, None)
        if b:
            blocks.append(b)
    for h in getattr(s, "handlers", []) or []:
        blocks.append(h.body)
    for c in getattr(s, "cases", []) or []:
        blocks.append(c.body)
    return blocks
