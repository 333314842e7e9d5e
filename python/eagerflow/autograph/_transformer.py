"""The source transformation: one Python function's AST in, the AST of its converted form out.

Passes, in order, on each function (nested functions get their own):
  1. `return` inside compound statements becomes `do_return__ = True; retval__ = value`, the code
     after an if whose branch always returns moves into its other branch (TF's normalization),
     and other code after a statement that may return is guarded by `if not do_return__:`;
  2. `break`/`continue` become flags, the code after them guarded, loops test `not break__N`;
  3. expressions: `and`/`or`/`not`, `a if c else b` and calls become ag__.and_/or_/not_/if_exp/
     converted_call (the runtime decides tensor or Python);
  4. `if`/`while`/`for` become ag__.if_stmt/while_stmt/for_stmt over closures: the branches and
     bodies as functions that assign the statement's names with `nonlocal`, and get_state/
     set_state functions that read and write them.
"""
import ast

from ._ast_util import (AG, DO_RETURN, RETVAL, _LOOPS, _SCOPES, _ag, _assign, _call, _const, _contains, _def,
                        _expr, _lambda, _name, _not, _targets, _walk_block, modified)
from ._expressions import _Expressions


class _Function:
    """The conversion of one function definition."""

    def __init__(self, node, qualname, line_offset):
        self.node = node
        self.line_offset = line_offset
        self.qualname = qualname
        self.count = 0
        a = node.args
        self.params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        self.params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        self.globals = set()
        self.nonlocals = set()
        for n in _walk_block(node.body):
            if isinstance(n, ast.Global):
                self.globals.update(n.names)
            elif isinstance(n, ast.Nonlocal):
                self.nonlocals.update(n.names)
        bound = []
        for n in _walk_block(node.body):
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.withitem,
                              ast.NamedExpr, ast.Delete)):
                targets = ([n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr))
                           else n.targets if isinstance(n, (ast.Assign, ast.Delete))
                           else [n.optional_vars] if n.optional_vars is not None else [])
                for t in targets:
                    names = []
                    _targets(t, names)
                    bound.extend(x for x in names if "." not in x)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                bound.append(n.name)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.append(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                bound.extend((x.asname or x.name).split(".")[0] for x in n.names)
        self.locals = (set(bound) | self.params | self.nonlocals | self.globals | {RETVAL, DO_RETURN})
        # (line, name) of every read in the original function: a loop's live-out names are those
        # read after it or anywhere in a loop around it (the passes move code, never its lines)
        self.loads = [(n.lineno, n.id) for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        # Names a nested function or lambda reads: it may run after any if, so they stay outputs.
        self.closure_reads = {n.id for f in ast.walk(node) if f is not node and isinstance(
            f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) for n in ast.walk(f)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        self.loops_around = []
        self.state_names = set()
        self.synthetic = {RETVAL, DO_RETURN}  # the passes' own names (flags): read by code they add

    def fresh(self, prefix):
        self.count += 1
        name = f"{prefix}{self.count}"
        self.locals.add(name)
        self.synthetic.add(name)
        return name

    def where(self, node, kind, src):
        return _call(_ag("Where"), [_const(self.qualname), _const(getattr(node, "lineno", 0) + self.line_offset), _const(kind), _const(src)])

    # --- pass 1: return -----------------------------------------------------------------------
    def returns(self):
        body = self.node.body
        inner = any(_contains([s], ast.Return) for s in body if not isinstance(s, ast.Return))
        if not inner:  # returns only at the top level: each checks its value is defined on every path
            for s in body:
                if isinstance(s, ast.Return) and s.value is not None:
                    s.value = ast.copy_location(_call(_ag("retval"), [s.value]), s.value)
            return
        self.node.body = ([_assign(DO_RETURN, _const(False)), _assign(RETVAL, _call(_ag("UndefinedReturnValue")))]
                          + self._ret_block(body)
                          + [ast.Return(value=_call(_ag("retval"), [_name(RETVAL), _const(True)]))])

    @staticmethod
    def _always(stmts):
        for s in stmts:
            if isinstance(s, ast.Return):
                return True
            if isinstance(s, ast.If) and _Function._always(s.body) and _Function._always(s.orelse):
                return True
            if isinstance(s, ast.With) and _Function._always(s.body):
                return True
        return False

    def _ret_block(self, stmts):
        out = []
        for i, s in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(s, ast.Return):
                value = s.value if s.value is not None else _const(None)
                out += [ast.copy_location(_assign(DO_RETURN, _const(True)), s),
                        ast.copy_location(_assign(RETVAL, value), s)]
                return out
            if not _contains([s], ast.Return):
                out.append(s)
                continue
            if isinstance(s, ast.If):
                b, e = self._always(s.body), self._always(s.orelse)
                if b and not e and rest:
                    s.orelse, rest = s.orelse + rest, []
                elif e and not b and rest:
                    s.body, rest = s.body + rest, []
                s.body = self._ret_block(s.body)
                s.orelse = self._ret_block(s.orelse)
                out.append(s)
                if b and e:
                    return out
            elif isinstance(s, _LOOPS):
                s.body = self._ret_block(s.body)
                s.orelse = self._ret_block(s.orelse)
                s._ag_flags = getattr(s, "_ag_flags", []) + [DO_RETURN]
                out.append(s)
            elif isinstance(s, (ast.With, ast.AsyncWith)):
                s.body = self._ret_block(s.body)
                out.append(s)
            elif isinstance(s, ast.Try):
                s.body = self._ret_block(s.body)
                for h in s.handlers:
                    h.body = self._ret_block(h.body)
                s.orelse = self._ret_block(s.orelse)
                s.finalbody = self._ret_block(s.finalbody)
                out.append(s)
            else:
                out.append(s)
            if rest:
                guard = ast.If(test=_not(DO_RETURN), body=self._ret_block(rest), orelse=[])
                guard._ag_src = "not do_return"
                out.append(ast.copy_location(guard, rest[0]))
            return out
        return out

    # --- pass 2: break / continue ----------------------------------------------------------------
    def loops(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, _SCOPES):
                out.append(s)
                continue
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, self.loops(getattr(s, field)))
            if isinstance(s, ast.Try):
                for h in s.handlers:
                    h.body = self.loops(h.body)
            if not isinstance(s, (ast.For, ast.While)):
                out.append(s)
                continue
            before, after = [], []
            if _contains(s.body, ast.Continue, into_loops=False):
                flag = self.fresh("continue__")
                s.body = [_assign(flag, _const(False))] + self._guard(s.body, ast.Continue, flag)
            broke = None
            if _contains(s.body, ast.Break, into_loops=False):
                broke = self.fresh("break__")
                before.append(ast.copy_location(_assign(broke, _const(False)), s))
                s.body = self._guard(s.body, ast.Break, broke)
                s._ag_flags = getattr(s, "_ag_flags", []) + [broke]
            if s.orelse:
                if broke is None:
                    after = s.orelse
                else:
                    guard = ast.If(test=_not(broke), body=s.orelse, orelse=[])
                    guard._ag_src = "not break"
                    after = [ast.copy_location(guard, s.orelse[0])]
                s.orelse = []
            out += before + [s] + after
        return out

    def _guard(self, stmts, kind, flag):
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, kind):
                out.append(ast.copy_location(_assign(flag, _const(True)), s))
                return out
            if not _contains([s], kind, into_loops=False):
                out.append(s)
                continue
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list) and not isinstance(s, _LOOPS):
                    setattr(s, field, self._guard(getattr(s, field), kind, flag))
            if isinstance(s, ast.Try):
                for h in s.handlers:
                    h.body = self._guard(h.body, kind, flag)
            out.append(s)
            rest = stmts[i + 1:]
            if rest:
                guard = ast.If(test=_not(flag), body=self._guard(rest, kind, flag), orelse=[])
                guard._ag_src = "not " + flag.rstrip("0123456789").rstrip("_")
                out.append(ast.copy_location(guard, rest[0]))
            return out
        return out

    # --- pass 4: control flow --------------------------------------------------------------------
    def block(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, (ast.FunctionDef,)):
                out.append(convert_function(s, self.qualname + ".<locals>." + s.name, top=False,
                                            line_offset=self.line_offset))
            elif isinstance(s, ast.If):
                out += self._if(s)
            elif isinstance(s, ast.While):
                out += self._while(s)
            elif isinstance(s, ast.For):
                out += self._for(s)
            else:
                for field in ("body", "orelse", "finalbody"):
                    if isinstance(getattr(s, field, None), list) and not isinstance(s, _SCOPES):
                        setattr(s, field, self.block(getattr(s, field)))
                if isinstance(s, ast.Try):
                    for h in s.handlers:
                        h.body = self.block(h.body)
                if isinstance(s, ast.Match):
                    for c in s.cases:
                        c.body = self.block(c.body)
                out.append(s)
        return out

    def _declare(self, mods):
        plain = [m for m in mods if "." not in m]
        decl = []
        nl = [m for m in plain if m not in self.globals]
        gl = [m for m in plain if m in self.globals]
        if nl:
            decl.append(ast.Nonlocal(names=nl))
        if gl:
            decl.append(ast.Global(names=gl))
        return decl

    def _state_functions(self, mods, n):
        get_name, set_name = f"{AG}get_state_{n}", f"{AG}set_state_{n}"
        reads = []
        for m in mods:
            if "." in m:
                base, attr = m.rsplit(".", 1)
                reads.append(_call(_ag("ld_attr"), [_expr(base), _const(attr)]))
            else:
                reads.append(_name(m))
        getter = _def(get_name, [ast.Return(value=ast.Tuple(elts=reads, ctx=ast.Load()))])
        writes = self._declare(mods)
        for k, m in enumerate(mods):
            item = ast.Subscript(value=_name(f"{AG}vars"), slice=_const(k), ctx=ast.Load())
            if "." in m:
                base, attr = m.rsplit(".", 1)
                writes.append(ast.Expr(_call(_ag("st_attr"), [_expr(base), _const(attr), item])))
            else:
                writes.append(ast.Assign(targets=[_name(m, ast.Store())], value=item))
        setter = _def(set_name, writes, args=[f"{AG}vars"])
        self.state_names.update(m for m in mods if "." not in m)
        return getter, setter, _name(get_name), _name(set_name)

    def _live_names(self, s):
        end = getattr(s, "end_lineno", None) or s.lineno
        return sorted({name for line, name in self.loads
                       if line > end or any(a <= line <= b for a, b in self.loops_around)})

    def _live(self, s):
        return ast.Tuple(elts=[_const(k) for k in self._live_names(s)], ctx=ast.Load())

    def _if_live_names(self, s):
        """The names an if's outputs need: read after it, or (in a tensor loop) read where the
        next iteration may see this one's value. A read inside the if that follows an
        assignment at the top of the same branch sees that assignment, so it needs no output
        (TF's liveness: a variable local to the branch is not an output of the cond)."""
        start = s.lineno
        end = max((getattr(n, "end_lineno", None) or 0 for n in ast.walk(s)), default=start)
        assigned = []  # (name, line after which the branch's reads see it, branch's last line)
        for branch in (s.body, s.orelse):
            if not branch:
                continue
            last = max((getattr(n, "end_lineno", None) or 0 for b in branch for n in ast.walk(b)), default=end)
            for stmt in branch:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    for t in targets:
                        for n in ast.walk(t):
                            if isinstance(n, ast.Name):
                                assigned.append((n.id, stmt.end_lineno or stmt.lineno, last))
        # global and nonlocal names outlive the function: always outputs.
        live = set(self.closure_reads) | self.synthetic | set(self.globals) | set(self.nonlocals)
        for line, name in self.loads:
            if line > end:
                live.add(name)
            elif any(a <= line <= b for a, b in self.loops_around):
                if line < start or not any(n == name and after < line <= last for n, after, last in assigned):
                    live.add(name)
        return sorted(live)

    def _in_loop(self, s, stmts):
        self.loops_around.append((s.lineno, getattr(s, "end_lineno", None) or s.lineno))
        try:
            return self.block(stmts)
        finally:
            self.loops_around.pop()

    def _if(self, s):
        mods = modified(s.body + s.orelse, self.locals)
        n = self.fresh("")
        src = getattr(s, "_ag_src", None) or ast.unparse(s.test)
        body = self._declare(mods) + self.block(s.body)
        orelse = self._declare(mods) + self.block(s.orelse)
        t, f = _def(f"{AG}if_true_{n}", body), _def(f"{AG}if_false_{n}", orelse)
        getter, setter, g, st = self._state_functions(mods, n)
        call = ast.Expr(_call(_ag("if_stmt"), [s.test, _name(t.name), _name(f.name), g, st,
                                              ast.Tuple(elts=[_const(m) for m in mods], ctx=ast.Load()),
                                              self.where(s, "if", src),
                                              ast.Tuple(elts=[_const(m) for m in self._if_live_names(s)],
                                                        ctx=ast.Load())]))
        return [ast.copy_location(x, s) for x in (t, f, getter, setter, call)]

    def _flags_test(self, s):
        flags = getattr(s, "_ag_flags", [])
        tests = [_call(_ag("not_"), [_name(f)]) for f in flags]
        return tests

    def _while(self, s):
        mods = modified(s.body, self.locals)
        n = self.fresh("")
        src = getattr(s, "_ag_src", None) or ast.unparse(s.test)
        test = s.test
        for extra in self._flags_test(s):
            test = _call(_ag("and_"), [_lambda(test), _lambda(extra)])
        test_fn = _def(f"{AG}loop_test_{n}", [ast.Return(value=test)])
        body = _def(f"{AG}loop_body_{n}", self._declare(mods) + self._in_loop(s, s.body))
        getter, setter, g, st = self._state_functions(mods, n)
        call = ast.Expr(_call(_ag("while_stmt"), [_name(test_fn.name), _name(body.name), g, st,
                                                 ast.Tuple(elts=[_const(m) for m in mods], ctx=ast.Load()),
                                                 self._live(s), self.where(s, "while", src)]))
        return [ast.copy_location(x, s) for x in (test_fn, body, getter, setter, call)]

    def _for(self, s):
        # the target is written before it is read in every iteration: it is a loop variable only
        # where it is read after the loop (TF's rule; it may change dtype from an earlier value)
        targets = []
        _targets(s.target, targets)
        live = set(self._live_names(s))
        mods = [m for m in modified([s], self.locals) if m in live or m not in targets]
        n = self.fresh("")
        src = getattr(s, "_ag_src", None) or ast.unparse(s.iter)
        extra = None
        tests = self._flags_test(s)
        out = []
        if tests:
            test = tests[0]
            for t in tests[1:]:
                test = _call(_ag("and_"), [_lambda(test), _lambda(t)])
            extra = _def(f"{AG}extra_test_{n}", [ast.Return(value=test)])
            out.append(extra)
        itr = f"{AG}itr"
        assign = ast.copy_location(ast.Assign(targets=[s.target], value=_name(itr)), s)
        body = _def(f"{AG}loop_body_{n}", self._declare(mods) + [assign] + self._in_loop(s, s.body), args=[itr])
        getter, setter, g, st = self._state_functions(mods, n)
        call = ast.Expr(_call(_ag("for_stmt"), [s.iter, _name(extra.name) if extra else _const(None), _name(body.name),
                                               g, st, ast.Tuple(elts=[_const(m) for m in mods], ctx=ast.Load()),
                                               self._live(s), self.where(s, "for", f"{ast.unparse(s.target)} in {src}")]))
        out += [body, getter, setter, call]
        return [ast.copy_location(x, s) for x in out]


def convert_function(node, qualname, top=True, line_offset=0):
    """Converts a FunctionDef in place (its nested defs too); returns it."""
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in _walk_block(node.body)):
        return node  # a generator or coroutine runs as it is (its body runs when iterated)
    fn = _Function(node, qualname, line_offset)
    fn.returns()
    node.body = fn.loops(node.body)
    node.body = [_Expressions(fn).visit(s) for s in node.body]
    body = fn.block(node.body)
    inits = [ast.copy_location(_assign(m, _call(_ag("Undefined"), [_const(m)])), node)
             for m in sorted(fn.state_names - fn.params - fn.globals - fn.nonlocals - {RETVAL, DO_RETURN})]
    docstring = []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        docstring, body = body[:1], body[1:]
    node.body = docstring + inits + body
    if top:
        node.decorator_list = []
    return node
