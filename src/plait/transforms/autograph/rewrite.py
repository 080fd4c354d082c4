"""The AST rewrite: a function's ``if``/``while``/``for`` become calls of run-time operators.

Pipeline on one ``FunctionDef`` (all in place, line numbers of the user's file kept):

1. jumps (``return``/``break``/``continue``) become flags (:mod:`.jumps`);
2. expressions: ``a and b`` -> ``ag__.and_(a, lambda: b)``, ``or``, ``not``,
   ``x if c else y`` -> ``ag__.ifexp(...)``, chained comparisons, and every call
   ``f(...)`` -> ``ag__.call(f, ...)`` (user functions are converted on the fly);
3. liveness and binding analysis (:mod:`.analysis`);
4. control flow, innermost first::

       if c: <body> else: <orelse>
   becomes::

       def ag__if_true_3(x, y): <body>; return (x, y)
       def ag__if_false_3(x, y): <orelse>; return (x, y)
       (x, y) = ag__.if_stmt(c, ag__if_true_3, ag__if_false_3, (x, y), ag__ctx[0])

   and loops become ``ag__.while_stmt(test_fn, body_fn, carried, info)`` /
   ``ag__.for_stmt(iterable, body_fn, carried, info, extra_test_fn)``.

``ag__`` is :mod:`plait.transforms.autograph.runtime`; ``ag__ctx`` is the list of
:class:`~.info.StmtInfo` built here.
"""
from __future__ import annotations

import ast
import copy
import itertools

from plait.transforms.autograph.analysis import (Analysis, assigned, first_assignment_lines,
                                                 declared_nonlocal)
from plait.transforms.autograph.info import StmtInfo
from plait.transforms.autograph.jumps import JumpLowering, RETVAL, DO_RETURN
from plait.errors import NotConvertible

_NO_WRAP_CALLS = {"super", "locals", "globals", "vars", "eval", "exec", "dir"}


def _load(n: str) -> ast.Name:
    return ast.Name(id=n, ctx=ast.Load())


def _store(n: str) -> ast.Name:
    return ast.Name(id=n, ctx=ast.Store())


def _ag(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_load("ag__"), attr=attr, ctx=ast.Load())


def _call(func: ast.expr, args: list, keywords: list | None = None) -> ast.Call:
    return ast.Call(func=func, args=args, keywords=keywords or [])


def _no_args(params=()) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _thunk(e: ast.expr) -> ast.Lambda:
    return ast.Lambda(args=_no_args(), body=e)


def _tuple(names, store=False) -> ast.Tuple:
    return ast.Tuple(elts=[(_store if store else _load)(n) for n in names],
                     ctx=ast.Store() if store else ast.Load())


class _Registry:
    """Collects StmtInfo objects; ``ref(info)`` is the AST ``ag__ctx[i]``."""

    def __init__(self, filename: str, function: str):
        self.infos: list[StmtInfo] = []
        self.filename = filename
        self.function = function

    def ref(self, info: StmtInfo) -> ast.Subscript:
        self.infos.append(info)
        return ast.Subscript(value=_load("ag__ctx"), slice=ast.Constant(len(self.infos) - 1),
                             ctx=ast.Load())

    def new(self, kind: str, node: ast.AST, **kw) -> StmtInfo:
        return StmtInfo(kind, self.filename, getattr(node, "lineno", 0), self.function, **kw)


class _Exprs(ast.NodeTransformer):
    """Step 2: boolean operators, conditional expressions and calls."""

    def __init__(self, reg: _Registry, self_name: str | None):
        self.reg = reg
        self.self_name = self_name      # for zero-argument super() in methods

    def visit_FunctionDef(self, node):      # nested functions convert when called
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_BoolOp(self, node: ast.BoolOp):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for v in node.values[1:] for n in ast.walk(v)):
            return node
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(
            _call(_ag(fn), [node.values[0]] + [_thunk(v) for v in node.values[1:]]), node)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call(_ag("not_"), [node.operand]), node)
        return node

    def visit_IfExp(self, node: ast.IfExp):
        self.generic_visit(node)
        info = self.reg.new("conditional expression", node, outputs=("the value",))
        return ast.copy_location(_call(_ag("ifexp"), [node.test, _thunk(node.body),
                                                      _thunk(node.orelse),
                                                      self.reg.ref(info)]), node)

    def visit_Compare(self, node: ast.Compare):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        operands = [node.left] + node.comparators
        pairs = [ast.Compare(left=copy.deepcopy(operands[i]), ops=[op],
                             comparators=[copy.deepcopy(operands[i + 1])])
                 for i, op in enumerate(node.ops)]
        return ast.copy_location(_call(_ag("and_"), [pairs[0]] + [_thunk(p) for p in
                                                                  pairs[1:]]), node)

    def visit_Assert(self, node: ast.Assert):
        self.generic_visit(node)
        info = self.reg.new("assert", node)
        msg = _thunk(node.msg) if node.msg is not None else ast.Constant(None)
        call = _call(_ag("assert_"), [node.test, msg, self.reg.ref(info)])
        return ast.copy_location(ast.Expr(value=call), node)

    def visit_For(self, node: ast.For):
        self.generic_visit(node)
        extra = getattr(node, "ag_extra_test", None)
        if extra is not None:
            node.ag_extra_test = self.visit(extra)
        return node

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id == "super" and not node.args and self.self_name:
            # the branch/body functions are nested, so spell out super's arguments
            node.args = [_load("__class__"), _load(self.self_name)]
            return node
        if (isinstance(f, ast.Name) and f.id in _NO_WRAP_CALLS) or (
                isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                and f.value.id == "ag__"):
            return node
        return ast.copy_location(_call(_ag("call"), [node.func] + node.args, node.keywords),
                                 node)


class _ControlFlow:
    """Step 4: rewrite ``if``/``while``/``for`` bottom-up into run-time operator calls."""

    def __init__(self, analysis: Analysis, reg: _Registry, decls: dict[str, str]):
        self.an = analysis
        self.reg = reg
        self.decls = decls
        self._ids = itertools.count(1)

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:
        if isinstance(s, ast.If):
            return self._if(s)
        if isinstance(s, ast.While):
            return self._while(s)
        if isinstance(s, ast.For):
            return self._for(s)
        for name in ("body", "orelse", "finalbody"):
            block = getattr(s, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt) and \
                    not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                setattr(s, name, self.block(block))
        for h in getattr(s, "handlers", []) or []:
            h.body = self.block(h.body)
        for c in getattr(s, "cases", []) or []:
            c.body = self.block(c.body)
        return [s]

    # -- helpers --------------------------------------------------------------------
    def _decls(self, original_body: list[ast.stmt], like) -> list[ast.stmt]:
        names = sorted(assigned(original_body) & set(self.decls))
        out = []
        for kind in ("global", "nonlocal"):
            ns = [n for n in names if self.decls[n] == kind]
            if ns:
                cls = ast.Global if kind == "global" else ast.Nonlocal
                out.append(ast.copy_location(cls(names=ns), like))
        return out

    def _fn(self, name: str, params, body: list[ast.stmt], ret: ast.expr | None,
            like: ast.AST, original_body: list[ast.stmt]) -> ast.FunctionDef:
        stmts = self._decls(original_body, like) + body
        if ret is not None:
            stmts.append(ast.copy_location(ast.Return(value=ret), like))
        if not stmts:
            stmts = [ast.Pass()]
        fd = ast.FunctionDef(name=name, args=_no_args(params), body=stmts, decorator_list=[],
                             returns=None, type_comment=None)
        return ast.copy_location(fd, like)

    def _inits(self, s: ast.stmt, names) -> list[ast.stmt]:
        """Bind inputs that may still be unassigned Python locals to ``Undefined``."""
        f = self.an.facts[s]
        out = []
        for n in names:
            if n in f.bound:
                continue
            undef = ast.Assign(targets=[_store(n)],
                               value=_call(_ag("Undefined"), [ast.Constant(n)]))
            if n in f.maybe_bound:
                stmt = ast.Try(body=[ast.Expr(value=_load(n))],
                               handlers=[ast.ExceptHandler(type=_load("NameError"), name=None,
                                                           body=[undef])],
                               orelse=[], finalbody=[])
            else:
                stmt = undef
            out.append(ast.copy_location(stmt, s))
        return out

    def _result(self, s: ast.stmt, outs, call: ast.Call) -> ast.stmt:
        if outs:
            return ast.copy_location(ast.Assign(targets=[_tuple(outs, store=True)],
                                                value=call), s)
        return ast.copy_location(ast.Expr(value=call), s)

    # -- statements -----------------------------------------------------------------
    def _if(self, s: ast.If) -> list[ast.stmt]:
        k = next(self._ids)
        ins = sorted(self.an.inputs(s))
        outs = sorted(self.an.outputs(s))
        info = self.reg.new("if", s, inputs=tuple(ins), outputs=tuple(outs),
                            lines_a=first_assignment_lines(s.body),
                            lines_b=first_assignment_lines(s.orelse))
        body, orelse = self.block(s.body), self.block(s.orelse)
        t_name, f_name = f"ag__if_true_{k}", f"ag__if_false_{k}"
        t_fn = self._fn(t_name, ins, body, _tuple(outs), s, s.body)
        f_fn = self._fn(f_name, ins, orelse, _tuple(outs), s.orelse[0] if s.orelse else s,
                        s.orelse)
        call = _call(_ag("if_stmt"), [s.test, _load(t_name), _load(f_name), _tuple(ins),
                                      self.reg.ref(info)])
        return self._inits(s, ins) + [t_fn, f_fn, self._result(s, outs, call)]

    def _while(self, s: ast.While) -> list[ast.stmt]:
        k = next(self._ids)
        carried = sorted(self.an.outputs(s))
        info = self.reg.new("while", s, inputs=tuple(carried), outputs=tuple(carried),
                            lines_a=first_assignment_lines(s.body))
        body = self.block(s.body)
        t_name, b_name = f"ag__while_test_{k}", f"ag__while_body_{k}"
        t_fn = self._fn(t_name, carried, [], s.test, s, [])
        b_fn = self._fn(b_name, carried, body, _tuple(carried), s, s.body)
        call = _call(_ag("while_stmt"), [_load(t_name), _load(b_name), _tuple(carried),
                                         self.reg.ref(info)])
        return self._inits(s, carried) + [t_fn, b_fn, self._result(s, carried, call)]

    def _for(self, s: ast.For) -> list[ast.stmt]:
        k = next(self._ids)
        carried = sorted(self.an.outputs(s))
        info = self.reg.new("for", s, inputs=tuple(carried), outputs=tuple(carried),
                            lines_a=first_assignment_lines([ast.Assign(targets=[s.target],
                                                                       value=s.iter)] + s.body))
        body = self.block(s.body)
        b_name = f"ag__for_body_{k}"
        bind = ast.copy_location(ast.Assign(targets=[s.target], value=_load("ag__itr")), s)
        b_fn = self._fn(b_name, ["ag__itr"] + carried, [bind] + body, _tuple(carried), s,
                        s.body)
        stmts = self._inits(s, carried) + [b_fn]
        extra = getattr(s, "ag_extra_test", None)
        if extra is not None:
            t_name = f"ag__for_test_{k}"
            stmts.append(self._fn(t_name, carried, [], extra, s, []))
            extra_ref = _load(t_name)
        else:
            extra_ref = ast.Constant(None)
        call = _call(_ag("for_stmt"), [s.iter, _load(b_name), _tuple(carried),
                                       self.reg.ref(info), extra_ref])
        return stmts + [self._result(s, carried, call)]


def _params(fn: ast.FunctionDef) -> set[str]:
    a = fn.args
    names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    for x in (a.vararg, a.kwarg):
        if x is not None:
            names.add(x.arg)
    return names


def convert_function_def(fn: ast.FunctionDef, filename: str, function: str,
                         is_method: bool = False) -> tuple[ast.FunctionDef, list[StmtInfo]]:
    """Rewrite ``fn`` (in place) and return it with the StmtInfo list for ``ag__ctx``.

    ``is_method``: ``fn`` has a ``__class__`` cell (it uses zero-argument ``super()``).
    """
    for n in ast.walk(fn):
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            raise NotConvertible("generator or coroutine")
    if isinstance(fn, ast.AsyncFunctionDef):
        raise NotConvertible("async function")
    fn.decorator_list = []
    reg = _Registry(filename, function)
    jumps = JumpLowering()
    jumps.run(fn)
    if jumps.lowered_returns and not jumps.always_returns:
        info = reg.new("def", fn)
        fn.body[-1].value = _call(_ag("ret"), [_load(RETVAL), _load(DO_RETURN),
                                               reg.ref(info)])
    positional = fn.args.posonlyargs + fn.args.args
    exprs = _Exprs(reg, positional[0].arg if is_method and positional else None)
    fn.body = [exprs.visit(s) for s in fn.body]
    decls: dict[str, str] = {}
    for s in ast.walk(fn):
        if isinstance(s, (ast.Global, ast.Nonlocal)):
            for n in s.names:
                decls[n] = "global" if isinstance(s, ast.Global) else "nonlocal"
    decls = {n: k for n, k in decls.items() if n in declared_nonlocal(fn)}
    params = _params(fn)
    analysis = Analysis(fn, set(decls), params)
    analysis.mark_bound(fn.body, set(params), set(params))
    fn.body = _ControlFlow(analysis, reg, decls).block(fn.body)
    ast.fix_missing_locations(fn)
    return fn, reg.infos
