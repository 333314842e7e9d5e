"""AST helpers of the converter: node builders, scope walks, and the names a block assigns."""
import ast


AG = "ag__"
RETVAL = "retval__"
DO_RETURN = "do_return__"
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard",
             "popitem", "sort", "reverse"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)


def _name(id_, ctx=None):
    return ast.Name(id=id_, ctx=ctx or ast.Load())


def _ag(attr):
    return ast.Attribute(value=_name(AG), attr=attr, ctx=ast.Load())


def _call(func, args=(), keywords=()):
    return ast.Call(func=func, args=list(args), keywords=list(keywords))


def _const(v):
    return ast.Constant(value=v)


def _assign(target, value):
    return ast.Assign(targets=[_name(target, ast.Store())], value=value)


def _not(name):
    return ast.UnaryOp(op=ast.Not(), operand=_name(name))


def _lambda(body):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                         kwarg=None, defaults=[]), body=body)


def _def(name, body, args=()):
    return ast.FunctionDef(name=name, args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in args],
                                                          vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                                          defaults=[]),
                           body=body or [ast.Pass()], decorator_list=[], returns=None, type_params=[])


def _walk_scope(node):
    """The nodes of `node` that belong to its scope (not inside nested functions, lambdas, classes)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, _SCOPES) and not isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            stack.extend(ast.iter_child_nodes(n))


def _walk_block(stmts):
    for s in stmts:
        yield s
        if not isinstance(s, _SCOPES):
            yield from _walk_scope(s)


def _contains(stmts, kinds, into_loops=True):
    """Whether `kinds` statements occur in stmts at this level (never inside nested functions; inside
    nested loops only with into_loops, as a `return` exits them while a `break` does not)."""
    for s in stmts:
        if isinstance(s, kinds):
            return True
        if isinstance(s, _SCOPES) or (not into_loops and isinstance(s, _LOOPS)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            sub = getattr(s, field, None)
            if sub and _contains(sub, kinds, into_loops):
                return True
        if isinstance(s, ast.ExceptHandler) and _contains(s.body, kinds, into_loops):
            return True
        if isinstance(s, ast.Match) and any(_contains(c.body, kinds, into_loops) for c in s.cases):
            return True
    return False


def _symbol(node):
    """'a' or 'a.b.c' for a name or an attribute chain on a name; None otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _symbol(node.value)
        return None if base is None else base + "." + node.attr
    return None


def _targets(t, out):
    if isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            _targets(e, out)
    elif isinstance(t, ast.Starred):
        _targets(t.value, out)
    elif isinstance(t, (ast.Name, ast.Attribute)):
        s = _symbol(t)
        if s is not None:
            out.append(s)
    elif isinstance(t, ast.Subscript):
        s = _symbol(t.value)
        if s is not None:
            out.append(s)


def modified(stmts, locals_):
    """The symbols a block assigns (names, a.b attributes, and local containers it mutates)."""
    out = []
    for n in _walk_block(stmts):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                _targets(t, out)
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            _targets(n.target, out)
        elif isinstance(n, (ast.For, ast.AsyncFor)):
            _targets(n.target, out)
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            _targets(n.optional_vars, out)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.append(n.name)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.extend((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.NamedExpr):
            out.append(n.target.id)
        elif isinstance(n, ast.Delete):
            for t in n.targets:
                _targets(t, out)
        elif isinstance(n, ast.Call):
            func = n.func
            if (isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr == "converted_call"
                    and func.args):
                func = func.args[0]  # pass 3 wrapped the callee
            if (isinstance(func, ast.Attribute) and func.attr in _MUTATORS and isinstance(func.value, ast.Name)
                    and func.value.id in locals_):
                out.append(func.value.id)
    seen, result = set(), []
    for s in out:
        base = s.split(".")[0]
        if s.startswith(AG) or s in seen or ("." not in s and s not in locals_) or ("." in s and base.startswith(AG)):
            continue
        seen.add(s)
        result.append(s)
    return result


def _expr(src):
    return ast.parse(src, mode="eval").body
