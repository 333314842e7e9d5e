"""ef.custom_gradient (TF's decorator) and ef.custom_vjp (JAX's) over the C++ rules
(include/eagerflow/autodiff/custom_gradient.h; docs/custom_ops.md)."""
import functools
import inspect

from . import _core


def _flatten(outputs):
    """A tensor, or a tuple/list of tensors, as a list and a way back."""
    if isinstance(outputs, (tuple, list)):
        kind = type(outputs)
        return list(outputs), (lambda xs: kind(xs))
    return [outputs], (lambda xs: xs[0])


def _as_list(grads):
    return list(grads) if isinstance(grads, (tuple, list)) else [grads]


def custom_gradient(f=None):
    """TF's tf.custom_gradient:

        @ef.custom_gradient
        def log1pexp(x):
            e = ef.exp(x)
            def grad(dy):
                return dy * (1 - 1 / (1 + e))
            return ef.log(1 + e), grad

    `f` takes tensors and returns (outputs, grad_fn); grad_fn(*output_cotangents) returns the
    gradient of each argument (one tensor, or a tuple; None for none). When `f` reads trainable
    variables, grad_fn is called with `variables=[...]` (in the order they were first read) and
    returns (argument_gradients, variable_gradients), as in TF. Works eagerly, under
    GradientTape and ef.grad, inside ef.function (grad_fn is traced with the forward pass) and
    for gradients of gradients when grad_fn is written with ef ops."""
    if f is None:
        return custom_gradient
    name = getattr(f, "__name__", "custom_gradient")

    @functools.wraps(f)
    def wrapper(*args):
        unflatten = []

        def body(xs):
            result = f(*xs)
            if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
                raise TypeError(f"ef.custom_gradient: '{name}' must return (outputs, grad_fn)")
            outputs, grad_fn = result
            flat, back = _flatten(outputs)
            unflatten.append(back)

            def grad(dys):
                variables = _core._custom_variables()
                if not variables:
                    return _as_list(grad_fn(*dys))
                if "variables" not in inspect.signature(grad_fn).parameters:
                    names = ", ".join(v.name for v in variables)
                    raise _core.Error(f"[custom_gradient] '{name}' reads trainable variables ({names}): its gradient "
                                      "function must accept variables= and return (argument_gradients, "
                                      "variable_gradients)")
                result = grad_fn(*dys, variables=variables)
                if not (isinstance(result, (tuple, list)) and len(result) == 2):
                    raise _core.Error(f"[custom_gradient] the gradient function of '{name}' was given variables= and "
                                      "must return (argument_gradients, variable_gradients)")
                return _as_list(result[0]) + list(result[1])
            return flat, grad

        outputs = _core._custom_gradient_call(name, body, list(args))
        return unflatten[-1](outputs)
    return wrapper


class custom_vjp:
    """JAX's jax.custom_vjp:

        @ef.custom_vjp
        def f(x, y):
            return ef.sin(x) * y
        def f_fwd(x, y):
            return f(x, y), (ef.cos(x), ef.sin(x), y)
        def f_bwd(res, g):
            cos_x, sin_x, y = res
            return (cos_x * g * y, sin_x * g)
        f.defvjp(f_fwd, f_bwd)

    The residuals are a tensor or a tuple whose tensors are handed to bwd at gradient time (other
    Python values in it are kept as they are). bwd returns one gradient per argument (None for
    none). The primal function runs when nothing differentiates; otherwise fwd does."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = None
        self.bwd = None

    def defvjp(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        name = getattr(self.fun, "__name__", "custom_vjp")
        if self.fwd is None:
            raise _core.Error(f"[custom_vjp] '{name}': call defvjp(fwd, bwd) before calling it")
        state = {}

        def primal(xs):
            flat, state["out"] = _flatten(self.fun(*xs))
            return flat

        def fwd(xs):
            result = self.fwd(*xs)
            if not (isinstance(result, tuple) and len(result) == 2):
                raise TypeError(f"ef.custom_vjp: the fwd of '{name}' must return (outputs, residuals)")
            flat, state["out"] = _flatten(result[0])
            res = result[1]
            items = list(res) if isinstance(res, (tuple, list)) else [res]
            tensors = [i for i, r in enumerate(items) if isinstance(r, _core.Tensor)]
            # Only the static items stay here: a symbolic tensor kept by this closure (which
            # the graph's node holds) would keep its graph alive through itself.
            static = [None if i in tensors else r for i, r in enumerate(items)]
            state["res"] = (type(res) if isinstance(res, (tuple, list)) else None, static, tensors)
            return flat, [items[i] for i in tensors]

        def bwd(res_tensors, cotangents):
            container, items, tensors = state["res"]
            items = list(items)
            for i, t in zip(tensors, res_tensors):
                items[i] = t
            res = items[0] if container is None else container(items)
            return _as_list(self.bwd(res, state["out"](cotangents)))

        outputs = _core._custom_vjp_call(name, primal, fwd, bwd, list(args))
        return state["out"](outputs)
