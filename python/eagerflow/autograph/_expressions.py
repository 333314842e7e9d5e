"""Pass 3 of the converter: `and`/`or`/`not`, conditional expressions and calls become
ag__.and_/or_/not_/if_exp/converted_call (the runtime decides tensor or Python)."""
import ast

from ._ast_util import AG, _ag, _call, _const, _lambda, _name


class _Expressions(ast.NodeTransformer):
    """Pass 3: and/or/not, conditional expressions and calls (not inside nested function defs,
    which are converted on their own)."""

    def __init__(self, fn):
        self.fn = fn
        self.depth = 0

    def visit_FunctionDef(self, node):  # noqa: N802 - ast's visitor names
        return node  # a nested def: converted by its own _Function

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_BoolOp(self, node):  # noqa: N802
        self.generic_visit(node)
        op = "and_" if isinstance(node.op, ast.And) else "or_"
        result = node.values[-1]
        for v in reversed(node.values[:-1]):
            result = _call(_ag(op), [_lambda(v), _lambda(result)])
        return ast.copy_location(result, node)

    def visit_UnaryOp(self, node):  # noqa: N802
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call(_ag("not_"), [node.operand]), node)
        return node

    def visit_IfExp(self, node):  # noqa: N802
        src = ast.unparse(node.test)
        self.generic_visit(node)
        return ast.copy_location(_call(_ag("if_exp"), [node.test, _lambda(node.body), _lambda(node.orelse),
                                                       self.fn.where(node, "if-expression", src)]), node)

    def visit_Call(self, node):  # noqa: N802
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args and not node.keywords:
            params = self.fn.node.args.posonlyargs + self.fn.node.args.args
            if params:  # explicit: the branches and loop bodies that hold it are nested functions
                node.args = [_name("__class__"), _name(params[0].arg)]
            return node
        if isinstance(node.func, ast.Name) and node.func.id in ("super", "locals", "globals", "vars", "eval", "exec"):
            return node
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == AG:
            return node  # the converter's own calls
        node.func = ast.copy_location(_call(_ag("converted_call"), [node.func]), node.func)
        return node

    def visit_For(self, node):  # noqa: N802
        if not hasattr(node, "_ag_src"):
            node._ag_src = ast.unparse(node.iter)
        if isinstance(node.iter, ast.Call):
            call = node.iter
            self.generic_visit(call)
            func = call.func.args[0] if (isinstance(call.func, ast.Call) and isinstance(call.func.func, ast.Attribute)
                                         and call.func.func.attr == "converted_call") else call.func
            kw = ast.Dict(keys=[_const(k.arg) if k.arg else None for k in call.keywords],
                          values=[k.value for k in call.keywords])
            node.iter = ast.copy_location(_call(_ag("for_iterable"), [func, ast.Tuple(elts=call.args, ctx=ast.Load()), kw]), call)
            node.target = self.visit(node.target)
            node.body = [self.visit(s) for s in node.body]
            node.orelse = [self.visit(s) for s in node.orelse]
            return node
        return self.generic_visit(node)

    def visit_While(self, node):  # noqa: N802
        if not hasattr(node, "_ag_src"):
            node._ag_src = ast.unparse(node.test)
        return self.generic_visit(node)

    visit_If = visit_While
