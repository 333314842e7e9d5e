"""Keras 3's RNN layer and cells written from ef ops: RNN(cell) runs any cell (these, or a user's
layer with call(inputs, states) and state_size) over the time axis, unrolled at trace time;
SimpleRNNCell, LSTMCell, GRUCell and StackedRNNCells are Keras' cells with Keras' weights."""
import inspect

import eagerflow as _ef

from .. import _core
from . import activations as _activations
from . import initializers as _initializers
from ._catalogue_base import CatalogueLayer, initializer, register, regularizer
from ._layers_wrappers import deserialize, serialize


class _Orthogonal(_initializers.Initializer):
    """Keras' default recurrent_initializer: the Q of a normal matrix's QR (signs fixed by R's
    diagonal), scaled by gain."""

    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None):
        cols = int(shape[-1])
        n = 1
        for d in shape[:-1]:
            n *= int(d)
        flat = (max(n, cols), min(n, cols))
        a = _ef.random.normal(flat, seed=self.seed)
        q, r = _ef.linalg.qr(a)
        q = q * _ef.sign(_ef.linalg.diag_part(r))
        if n < cols:
            q = _ef.transpose(q)
        return _ef.cast(self.gain * _ef.reshape(q, list(shape)), dtype or _ef.float32)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


def _recurrent_initializer(value):
    if isinstance(value, str) and value.lower() == "orthogonal":
        return _Orthogonal()
    if isinstance(value, dict) and value.get("class_name") in ("Orthogonal", "OrthogonalInitializer"):
        return _Orthogonal(**value.get("config", {}))
    return initializer(value)


def _no_dropout(cls, dropout, recurrent_dropout):
    if dropout or recurrent_dropout:
        raise NotImplementedError(f"{cls}: dropout / recurrent_dropout are not supported in eagerflow's Python cells; "
                                  "use the SimpleRNN / LSTM / GRU layers, which have them")


class _Cell(CatalogueLayer):
    """A Keras cell: cell(inputs, states) -> (output, new_states), states a list as Keras passes."""

    _config = ("units", "activation", "use_bias", "kernel_initializer", "recurrent_initializer", "bias_initializer",
               "kernel_regularizer", "recurrent_regularizer", "bias_regularizer", "kernel_constraint",
               "recurrent_constraint", "bias_constraint", "dropout", "recurrent_dropout", "seed")

    def _setup(self, units, activation, use_bias, kernel_initializer, recurrent_initializer, bias_initializer,
               dropout, recurrent_dropout, seed, kwargs):
        weight_regularizers = {k + "_regularizer": regularizer(kwargs.pop(k + "_regularizer", None))
                               for k in ("kernel", "recurrent", "bias")}
        for key in [k for k in kwargs if k.endswith("_constraint")]:
            if kwargs.pop(key) is not None:
                raise NotImplementedError(f"{type(self).__name__}: {key} is not supported in eagerflow")
        super().__init__(**kwargs)
        _no_dropout(type(self).__name__, dropout, recurrent_dropout)
        if not isinstance(units, int) or units <= 0:
            raise ValueError("Received an invalid value for argument `units`, expected a positive integer, "
                             f"got {units}.")
        self.units, self.activation, self.use_bias = units, _activations.get(activation), bool(use_bias)
        self.kernel_initializer, self.recurrent_initializer = kernel_initializer, recurrent_initializer
        self.bias_initializer = bias_initializer
        self.dropout, self.recurrent_dropout, self.seed = dropout, recurrent_dropout, seed
        for key in ("kernel", "recurrent", "bias"):
            setattr(self, key + "_regularizer", weight_regularizers[key + "_regularizer"])
            setattr(self, key + "_constraint", None)

    def __call__(self, inputs, states, training=None):
        single = not isinstance(states, (list, tuple))
        outputs = super().__call__([inputs] + ([states] if single else list(states)), training=training)
        return outputs[0], (outputs[1] if single else list(outputs[1:]))

    def build(self, input_shape):
        if isinstance(input_shape, list):  # called through __call__: [inputs, *states]
            input_shape = input_shape[0]
        self._build(int(input_shape[-1]))

    def call(self, inputs, training=False):
        output, states = self.step(inputs[0], list(inputs[1:]), training)
        return [output] + list(states)

    _ef_prefix = ""

    def _weight(self, name, shape, init):
        variable = self.add_weight(self._ef_prefix + name, shape=shape, initializer=init)
        return self._regularize(getattr(self, name.replace("_kernel", "") + "_regularizer"), variable)

    def get_initial_state(self, batch_size=None):
        sizes = self.state_size if isinstance(self.state_size, list) else [self.state_size]
        return [_ef.zeros([batch_size, s]) for s in sizes]

    @property
    def output_size(self):
        return self.units


class SimpleRNNCell(_Cell):
    """h = activation(x @ kernel + h @ recurrent_kernel + bias)."""

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0,
                 seed=None, **kwargs):
        self._setup(units, activation, use_bias, kernel_initializer, recurrent_initializer, bias_initializer,
                    dropout, recurrent_dropout, seed, kwargs)

    @property
    def state_size(self):
        return self.units

    def _build(self, features):
        self.kernel = self._weight("kernel", (features, self.units), initializer(self.kernel_initializer))
        self.recurrent_kernel = self._weight("recurrent_kernel", (self.units, self.units),
                                                _recurrent_initializer(self.recurrent_initializer))
        if self.use_bias:
            self.bias = self._weight("bias", (self.units,), initializer(self.bias_initializer))

    def step(self, x, states, training=False):
        h = _ef.matmul(x, self.kernel)
        if self.use_bias:
            h = h + self.bias
        h = self.activation(h + _ef.matmul(states[0], self.recurrent_kernel))
        return h, [h]


class LSTMCell(_Cell):
    """Keras' LSTM step: gates i, f, c, o from x @ kernel + h @ recurrent_kernel + bias."""

    _config = _Cell._config + ("recurrent_activation", "unit_forget_bias")

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, dropout=0.0, recurrent_dropout=0.0, seed=None, **kwargs):
        self._setup(units, activation, use_bias, kernel_initializer, recurrent_initializer, bias_initializer,
                    dropout, recurrent_dropout, seed, kwargs)
        self.recurrent_activation = _activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self):
        return [self.units, self.units]

    def _build(self, features):
        u = self.units
        self.kernel = self._weight("kernel", (features, 4 * u), initializer(self.kernel_initializer))
        self.recurrent_kernel = self._weight("recurrent_kernel", (u, 4 * u),
                                                _recurrent_initializer(self.recurrent_initializer))
        if self.use_bias:
            init = initializer(self.bias_initializer)
            if self.unit_forget_bias:  # Keras: the forget gate's bias starts at one
                base = init

                class _ForgetOnes(_initializers.Initializer):
                    def __call__(self, shape, dtype=None):
                        return _ef.concat([base([u], dtype), _ef.ones([u], dtype or _ef.float32),
                                           base([2 * u], dtype)], 0)
                init = _ForgetOnes()
            self.bias = self._weight("bias", (4 * u,), init)

    def step(self, x, states, training=False):
        h, c = states[0], states[1]
        z = _ef.matmul(x, self.kernel) + _ef.matmul(h, self.recurrent_kernel)
        if self.use_bias:
            z = z + self.bias
        i, f, g, o = _ef.split(z, 4, axis=-1)
        i, f, o = self.recurrent_activation(i), self.recurrent_activation(f), self.recurrent_activation(o)
        c = f * c + i * self.activation(g)
        h = o * self.activation(c)
        return h, [h, c]


class GRUCell(_Cell):
    """Keras' GRU step (reset_after=True by default, as cuDNN's: two biases, bias shape (2, 3u))."""

    _config = _Cell._config[:-1] + ("reset_after", "seed", "recurrent_activation")

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 dropout=0.0, recurrent_dropout=0.0, reset_after=True, seed=None, **kwargs):
        self._setup(units, activation, use_bias, kernel_initializer, recurrent_initializer, bias_initializer,
                    dropout, recurrent_dropout, seed, kwargs)
        self.recurrent_activation = _activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)

    @property
    def state_size(self):
        return self.units

    def _build(self, features):
        u = self.units
        self.kernel = self._weight("kernel", (features, 3 * u), initializer(self.kernel_initializer))
        self.recurrent_kernel = self._weight("recurrent_kernel", (u, 3 * u),
                                                _recurrent_initializer(self.recurrent_initializer))
        if self.use_bias:
            shape = (2, 3 * u) if self.reset_after else (3 * u,)
            self.bias = self._weight("bias", shape, initializer(self.bias_initializer))

    def step(self, x, states, training=False):
        h = states[0]
        u = self.units
        if self.use_bias:
            input_bias, recurrent_bias = (self.bias[0], self.bias[1]) if self.reset_after else (self.bias, None)
        mx = _ef.matmul(x, self.kernel)
        if self.use_bias:
            mx = mx + input_bias
        x_z, x_r, x_h = _ef.split(mx, 3, axis=-1)
        if self.reset_after:
            inner = _ef.matmul(h, self.recurrent_kernel)
            if self.use_bias:
                inner = inner + recurrent_bias
            r_z, r_r, r_h = _ef.split(inner, 3, axis=-1)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            hh = self.activation(x_h + r * r_h)
        else:
            inner = _ef.matmul(h, self.recurrent_kernel[:, :2 * u])
            r_z, r_r = _ef.split(inner, 2, axis=-1)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            hh = self.activation(x_h + _ef.matmul(r * h, self.recurrent_kernel[:, 2 * u:]))
        h = z * h + (1 - z) * hh
        return h, [h]


def _state_list(size):
    return size if isinstance(size, (list, tuple)) else [size]


def _cell_step(cell, x, states, training):
    """One step of any cell: these cells' step(), or a user cell's call(inputs, states[, training])."""
    if isinstance(cell, (_Cell, StackedRNNCells)):
        return cell.step(x, states, training)
    call = cell.call
    try:
        takes_training = "training" in inspect.signature(call).parameters
    except (TypeError, ValueError):
        takes_training = False
    output, new = call(x, states, training=training) if takes_training else call(x, states)
    return output, (list(new) if isinstance(new, (list, tuple)) else [new])


def _build_cell(owner, cell, shape):
    owner._track(cell)
    if isinstance(cell, _Cell):
        # Built by the RNN, the cell's weights take the RNN's path: the cell's name keeps those of a
        # stack apart (rnn/lstm_cell/kernel, as Keras' paths).
        cell._ef_prefix = cell.name + "/"
        cell._build(int(shape[-1]))
    elif isinstance(cell, StackedRNNCells):
        cell._build_cells(owner, shape)
    else:
        cell.build(_core_shape(shape))
    try:
        cell.built = True
    except (AttributeError, TypeError):
        pass
    # The RNN runs the cell's steps itself, so it adds the cell's weight regularization losses.
    regularized = getattr(cell, "_ef_regularized", [])
    if regularized and not isinstance(owner, StackedRNNCells):
        owner._ef_regularized = getattr(owner, "_ef_regularized", []) + list(regularized)


def _core_shape(shape):
    from .._layers import TensorShape
    return TensorShape(shape)


class StackedRNNCells(CatalogueLayer):
    """Cells run one after the other at each step; the state is the list of the cells' states."""

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        self.cells = [deserialize(c) if isinstance(c, dict) else c for c in cells]
        for cell in self.cells:
            if not hasattr(cell, "state_size"):
                raise ValueError(f"All cells must have a `state_size` attribute. Received: cells={cells}")

    @property
    def state_size(self):
        return [c.state_size for c in self.cells]

    @property
    def output_size(self):
        cell = self.cells[-1]
        return getattr(cell, "output_size", _state_list(cell.state_size)[0])

    def get_config(self):
        config = super().get_config()
        config["cells"] = [serialize(c) for c in self.cells]
        return config

    def _build_cells(self, owner, shape):
        for cell in self.cells:
            _build_cell(owner, cell, shape)
            size = getattr(cell, "output_size", _state_list(cell.state_size)[0])
            shape = tuple(shape[:-1]) + (size,)

    def step(self, x, states, training=False):
        new_states = []
        for cell, state in zip(self.cells, states):
            nested = isinstance(cell.state_size, (list, tuple))
            x, new = _cell_step(cell, x, list(state) if nested else [state], training)
            new_states.append(list(new) if nested else new[0])
        return x, new_states


def _zeros_state(x0, size):
    """A zero state of `size` units for a batch of x0's (batch, features), whatever the batch."""
    if isinstance(size, (list, tuple)):
        return [_zeros_state(x0, s) for s in size]
    return _ef.zeros_like(x0[:, :1]) + _ef.zeros([int(size)], x0.dtype)


def _flatten(states):
    out = []
    for s in states:
        out.extend(_flatten(s) if isinstance(s, list) else [s])
    return out


class RNN(CatalogueLayer):
    """Keras' RNN(cell): the cell over axis 1 (batch, time, features). The time axis is unrolled
    when traced, so it must be known; stateful RNNs and masks are not supported."""

    _config = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll", "zero_output_for_mask")

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, dict):
            cell = deserialize(cell)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not hasattr(cell, "call") and not isinstance(cell, _core.Layer):
            raise ValueError(f"Argument `cell` should have a `call` method. Received: cell={cell}")
        if not hasattr(cell, "state_size"):
            raise ValueError("The RNN cell should have a `state_size` attribute (single integer or list of "
                             f"integers, one integer per RNN state). Received: cell={cell}")
        if stateful:
            raise NotImplementedError("RNN(stateful=True) is not supported in eagerflow's Python RNN")
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful, self.unroll = bool(go_backwards), False, bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)

    def get_config(self):
        config = super().get_config()
        config["cell"] = serialize(self.cell)
        return config

    def __call__(self, inputs, initial_state=None, training=None):
        if initial_state is None:
            return super().__call__(inputs, training=training)
        states = initial_state if isinstance(initial_state, (list, tuple)) else [initial_state]
        return super().__call__([inputs] + _flatten(list(states)), training=training)

    def build(self, input_shape):
        shape = input_shape[0] if isinstance(input_shape, list) else input_shape
        _build_cell(self, self.cell, tuple(shape[:1]) + tuple(shape[2:]))

    def _unflatten(self, flat):
        structure = self.cell.state_size
        sizes = _state_list(structure)
        out, i = [], 0
        for s in sizes:
            if isinstance(s, (list, tuple)):
                out.append(list(flat[i:i + len(s)]))
                i += len(s)
            else:
                out.append(flat[i])
                i += 1
        return out

    def call(self, inputs, training=False):
        if isinstance(inputs, (list, tuple)):
            x, states = inputs[0], self._unflatten(list(inputs[1:]))
        else:
            x, states = inputs, None
        if len(x.shape) < 3:
            raise ValueError(f"RNN expects inputs of shape (batch, time, ...). Received: shape={tuple(x.shape)}")
        steps = x.shape[1]
        if steps is None:
            raise ValueError("eagerflow's Python RNN unrolls the time axis, so its length must be known "
                             f"(got shape {tuple(x.shape)}); the SimpleRNN / LSTM / GRU layers take any length")
        if states is None:
            states = _zeros_state(x[:, 0], _state_list(self.cell.state_size))
        outputs = []
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        for t in order:
            output, states = _cell_step(self.cell, x[:, t], list(states), training)
            outputs.append(output)
        result = _ef.stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        if self.return_state:
            return [result] + _flatten(list(states))
        return result


register(SimpleRNNCell, LSTMCell, GRUCell, StackedRNNCells, RNN)
