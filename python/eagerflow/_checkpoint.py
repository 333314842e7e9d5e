"""tf.train.Checkpoint: saves and restores the object graph of python/eagerflow/_trackable.py.

Each variable is saved under the path of its first breadth-first edge names from the root, as
TF's keys: `net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE`; an optimizer's slot beside its variable:
`net/l1/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE`. Restoring matches the
saved graph to the objects by those edges. What the saved graph has and the program has not
created yet is restored when it appears (deferred restoration): an attribute, list item or dict
value set later on a Checkpoint or its wrappers, a Keras model's weights once it is called, an
optimizer's slots on its first apply_gradients (those need the slot variables before the update:
a zero-gradient apply creates them, the variables keep their values, then the saved slots are
assigned and the real update runs with them).
"""
import os
import weakref

import numpy as np

from . import _checkpoint_io as _io
from . import _core
from . import _keras3_names as _k3
from . import _tf_checkpoint as _tf
from . import _trackable as _t

_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
_AMBIGUOUS = object()  # a slot that cannot be told apart from another variable's


def _path_name(path):
    return "/".join(_t.escape(p) for p in path)


def _graph(root, skip_slots=False):
    """(the object graph, {key: (dtype, ndarray)}) of what is reachable from root; optimizers'
    slots in Keras 3's lists (_keras3_names.py), each a node with its own key as TF's."""
    first, _ = _t.walk(root)
    variables = [obj for obj, _ in first if _t.is_variable(obj)]
    extras = {id(obj): _k3.saving_lists(obj, variables, skip_slots) for obj, _ in first
              if isinstance(obj, _t._optimizer_class()) and not hasattr(obj, "inner_optimizer")}
    with _t.saving_extras(extras):
        order, edges = _t.walk(root)
    nodes = [{"children": []} for _ in order]
    for parent, name, child in edges:
        nodes[parent]["children"].append([name, child])
    values = {}
    for i, (obj, path) in enumerate(order):
        if _t.is_variable(obj):
            key = _path_name(path) + _VALUE_SUFFIX
            nodes[i]["key"] = key
            nodes[i]["full_name"] = _t.short_name(obj)
            values[key] = (obj.dtype.name, obj.numpy())
        elif hasattr(obj, "_ef_variable_value"):  # a value Keras 3 keeps in a variable (the learning rate)
            key = _path_name(path) + _VALUE_SUFFIX
            nodes[i]["key"] = key
            values[key] = obj._ef_variable_value()
        elif hasattr(obj, "_ef_checkpoint_state"):  # a tf.data iterator: its position (_iterator_state.py)
            key = _path_name(path) + "/.ATTRIBUTES/ITERATOR_STATE"
            nodes[i]["key"] = key
            values[key] = ("string", np.array([obj._ef_checkpoint_state()], dtype=object))
    return {"nodes": nodes}, values


def _assign(variable, value, key):
    shape = tuple(variable._shape_tuple)
    if tuple(value.shape) != shape:
        raise ValueError(f"Received incompatible tensor with shape {tuple(value.shape)} when attempting to restore "
                         f"variable with shape {shape} and name {key}.")
    variable.assign(value.astype(_io.numpy_dtype(variable.dtype.name)) if variable.dtype.name != "string" else value)


_LIVE = _t.WeakList()  # restorations with pending (deferred) values
_hooks = {}  # the wrapped methods while installed
_originals = {"call": _core.Layer.__call__, "apply": _core._train.Optimizer.apply_gradients}


def _training_class():
    from . import _training
    return _training._Training


_originals.update({k: _training_class().__dict__[k] for k in ("build", "fit", "train_on_batch")})


def _retry_all(_obj=None, scope=None, prepare=None):
    for r in list(_LIVE):
        r._retry(scope, prepare)
    _update_hooks()


def _in_trace():
    return _core._in_trace()


def _scope_of(layer):
    """The identities of a layer and what it holds: what its first call (or build) just created."""
    return {_t.identity(obj) for obj, _ in _t.walk(layer)[0]}


def _layer_call(self, *args, **kwargs):
    built = getattr(self, "built", True)
    out = _originals["call"](self, *args, **kwargs)
    if not built and not _in_trace():  # a built layer makes no new variables: nothing to look for
        before = _restored_count()
        _retry_all(scope=_scope_of(self))
        if _restored_count() != before:
            # this first call built the layer with its initial weights, restored only now: TF
            # restores at creation, so the result is the one of the restored weights
            out = _originals["call"](self, *args, **kwargs)
    return out


def _model_build(self, input_shape):
    built = self.built
    out = _originals["build"](self, input_shape)
    if not built and not _in_trace():
        _retry_all(scope=_scope_of(self))
    return out


def _input_shape(x):
    """The input shape (batch axis None) fit() or train_on_batch() will build a model for, or None."""
    if isinstance(x, _core._data.Dataset):
        spec = x.element_spec
        spec = spec[0] if isinstance(spec, tuple) else spec
        shape = getattr(spec, "shape", None)
        return None if not isinstance(shape, tuple) else (None,) + tuple(shape[1:])
    shape = getattr(x, "shape", None)
    return None if shape is None or isinstance(x, (dict, list, tuple)) else (None,) + tuple(shape)[1:]


def _before_training(self, x):
    """A model about to be built and trained by the C++ loop, out of the checkpoint's sight: built
    here first (restored by the build hook), and its optimizer's variables made and restored."""
    if _in_trace() or not any(r._pending or r._pending_slots for r in _LIVE):
        return
    if not self.built:
        shape = _input_shape(x)
        if shape is not None:
            try:
                self.build(shape)
            except Exception:  # noqa: BLE001 - a model this cannot build is built by fit; the checkpoint warns then
                pass
    opt = getattr(self, "optimizer", None)
    if self.built and isinstance(opt, _t._optimizer_class()) and any(r._waits_for(opt) for r in _LIVE):
        _retry_all(prepare=(opt, list(self.trainable_variables)))


def _model_fit(self, x=None, *args, **kwargs):
    _before_training(self, x)
    return _originals["fit"](self, x, *args, **kwargs)


def _model_train_on_batch(self, x, *args, **kwargs):
    _before_training(self, x)
    return _originals["train_on_batch"](self, x, *args, **kwargs)


def _restored_count():
    return sum(len(r._restored) for r in _LIVE)


def _apply_gradients(self, grads_and_vars, *args, **kwargs):
    apply = _originals["apply"]  # the hooks may be removed below
    if not _in_trace() and any(r._waits_for(self) for r in _LIVE):
        grads_and_vars = list(grads_and_vars)
        # the optimizer's variables (iterations, slots) saved for it, made and restored before this update uses them
        _retry_all(prepare=(self, [v for g, v in grads_and_vars if g is not None]))
    return apply(self, grads_and_vars, *args, **kwargs)


def _update_hooks():
    """Wraps Layer.__call__, Model.build/fit/train_on_batch and Optimizer.apply_gradients while
    some restoration waits (only then: a Python wrapper on every layer call is not free)."""
    pending = any(r._pending or r._pending_slots for r in _LIVE)
    opt = _t._optimizer_class()
    if pending and not _hooks:
        _hooks.update(call=_layer_call, apply=_apply_gradients, build=_model_build, fit=_model_fit,
                      train_on_batch=_model_train_on_batch)
        _core.Layer.__call__ = _layer_call
        opt.apply_gradients = _apply_gradients
        for name in ("build", "fit", "train_on_batch"):
            setattr(_training_class(), name, _hooks[name])
    elif not pending and _hooks:
        _hooks.clear()
        _core.Layer.__call__ = _originals["call"]
        opt.apply_gradients = _originals["apply"]
        for name in ("build", "fit", "train_on_batch"):
            setattr(_training_class(), name, _originals[name])


_t._notify_hooks.append(_retry_all)


def _creation_watched(obj):
    """Objects whose variables appear without telling us (a Keras layer built inside ef.function
    or by fit(), an optimizer's first update there): those are restored only when a hook saw them
    appear, never later over values they may have changed since."""
    return isinstance(obj, (_core.Layer, _t._optimizer_class()))


def _warn_missed(n):
    from ._function import _log_warning
    _log_warning(f"tf.train.Checkpoint: {n} saved value(s) not restored: their variables were created after "
                 "restore() where the checkpoint cannot watch (inside ef.function, by fit(), ...) and may have "
                 "changed since. Build the model (one eager call, or model.build(shape)) and let the optimizer make "
                 "its first update eagerly, or restore after that.")


def _checkpoint_description(graph, node_id):
    """(root).net.l1.kernel: a node's first path in the saved graph."""
    parents = {}
    for i, node in enumerate(graph["nodes"]):
        for name, child in node["children"]:
            parents.setdefault(child, (i, name))
    names = []
    while node_id in parents and node_id != 0:
        node_id, name = parents[node_id]
        names.append(name)
    return ".".join(["(root)"] + names[::-1])


class _Restoration:
    """One restore(): the saved graph matched to the objects, and what is still waiting."""

    def __init__(self, root, reader, skip_slots=False):
        self._root_ref = weakref.ref(root)
        self._skip_slots = skip_slots
        self._legacy = not isinstance(reader, _tf.Reader)  # eagerflow's older files: its older names
        self._reader = reader
        self._graph = reader.object_graph
        self._nodes = self._graph["nodes"]
        self._bound = {}            # node id -> object
        self._bound_ids = set()     # identities of the objects bound
        self._restored = set()      # keys assigned
        self._pending = []          # (object, child name, node id): the child does not exist yet
        self._pending_slots = []    # (variable node, optimizer node, slot name, key)
        self._missed = []           # (node id, slot key): variables that appeared unwatched (not restored)
        self._initial = True        # restore() itself: everything that exists is restored
        self._bind(0, root)
        _LIVE.add(self)
        self._retry()  # slots of variables that exist are created and restored now
        self._initial = False
        _update_hooks()

    def _children(self, obj):
        with _t.legacy_names(self._legacy):
            return dict(_t.children(obj))

    def _bind(self, node_id, obj):
        if node_id in self._bound:
            return
        self._bound[node_id] = obj
        self._bound_ids.add(_t.identity(obj))
        node = self._nodes[node_id]
        key = node.get("key")
        if key is not None and _t.is_variable(obj):
            _assign(obj, self._reader.get_tensor(key), key)
            self._restored.add(key)
        elif key is not None and hasattr(obj, "_ef_restore_variable_value"):
            obj._ef_restore_variable_value(self._reader.get_tensor(key))
            self._restored.add(key)
        elif key is not None and hasattr(obj, "_ef_restore_checkpoint_state"):
            obj._ef_restore_checkpoint_state(self._reader.get_tensor(key))
            self._restored.add(key)
        kids = self._children(obj)
        for name, child_id in node["children"]:
            if name in kids:
                self._bind(child_id, kids[name])
            elif self._nodes[child_id].get("has_values", True):  # (TF's empty nodes: nothing to wait for)
                self._pending.append((obj, name, child_id))
        for opt_id, slot, slot_key in ([] if self._skip_slots else node.get("slots", [])):
            self._pending_slots.append((node_id, opt_id, slot, slot_key))

    def _slot_variable(self, opt, var, slot):
        """The optimizer's slot of var; None before it exists; _AMBIGUOUS when variables of one name
        and shape make it impossible to tell which slot is var's (slots are known by names)."""
        if hasattr(opt, "_slots_of"):  # the optimizer's own record of var's slots: no guessing by names
            slots = opt._slots_of(var)
            name = slot if slot in slots else _k3.eager_slot_name(opt, slot, slots)
            return slots.get(name) if name is not None else None
        want = _t.short_name(var)
        found = [v for owner, name, v in _t.optimizer_variables(opt)[1] if owner == want and name == slot]
        if len(found) > 1:
            found = [v for v in found if tuple(v._shape_tuple) == tuple(var._shape_tuple)]
            if len(found) != 1:
                return _AMBIGUOUS
        return found[0] if found else None

    def _retry(self, scope=None, prepare=None):
        """Binds what appeared since. scope: identities of objects a hook saw created just now;
        prepare: (optimizer, variables) about to be updated (its variables are made first)."""
        if _in_trace():  # an assignment now would become part of the traced graph
            return
        created, made_opts = self._create_missing_slots(prepare)
        allowed = set(scope or ()) | made_opts
        missed = 0
        pending, self._pending = self._pending, []
        for obj, name, child_id in pending:
            if child_id in self._bound:
                continue
            kids = self._children(obj)
            if name not in kids:
                self._pending.append((obj, name, child_id))
            elif self._initial or not _creation_watched(obj) or _t.identity(obj) in allowed:
                self._bind(child_id, kids[name])
            else:
                self._missed.append((child_id, None))
                missed += 1
        slots, self._pending_slots = self._pending_slots, []
        for var_id, opt_id, slot, key in slots:
            var, opt = self._bound.get(var_id), self._bound.get(opt_id)
            v = self._slot_variable(opt, var, slot) if var is not None and opt is not None else None
            if v is None:
                self._pending_slots.append((var_id, opt_id, slot, key))
            elif v is _AMBIGUOUS:
                self._missed.append((var_id, key))
                missed += 1
            elif self._initial or (_t.identity(opt), _t.identity(var)) in created:
                _assign(v, self._reader.get_tensor(key), key)
                self._restored.add(key)
            else:
                self._missed.append((var_id, key))
                missed += 1
        if missed:
            _warn_missed(missed)
        if not self._pending and not self._pending_slots:
            _LIVE.discard(self)

    def _waits_for(self, opt):
        return any(self._bound.get(opt_id) is opt for _, opt_id, _, _ in self._pending_slots) or any(
            obj is opt for obj, _, _ in self._pending)

    def _create_missing_slots(self, prepare=None):
        """The optimizer variables saved for variables that exist, created now, before the
        optimizer's first update (which must use the saved ones): a zero-gradient apply, the
        variables and the optimizer's counters put back after it. Returns the (optimizer,
        variable) pairs and the optimizers it made variables for."""
        by_opt = {}
        for var_id, opt_id, slot, _ in self._pending_slots:
            var, opt = self._bound.get(var_id), self._bound.get(opt_id)
            if var is not None and opt is not None and self._slot_variable(opt, var, slot) is None:
                entry = by_opt.setdefault(id(opt), (opt, {}))
                entry[1][_t.identity(var)] = var
        if prepare is not None:
            opt, variables = prepare
            fresh = not opt.variables and any(obj is opt for obj, _, _ in self._pending)
            if fresh:  # its iterations (and any slots) do not exist yet: made by the same apply
                entry = by_opt.setdefault(id(opt), (opt, {}))
                for v in variables:
                    entry[1].setdefault(_t.identity(v), v)
        created, made = set(), set()
        for opt, variables in by_opt.values():
            variables = list(variables.values())
            counters = [v for _, v in _t.optimizer_variables(opt)[0]]
            kept = [v.numpy() for v in variables + counters]
            _originals["apply"](opt, [(_core.zeros_like(v.value()), v) for v in variables])
            for v, value in zip(variables + counters, kept):
                v.assign(value)
            made.add(_t.identity(opt))
            created.update((_t.identity(opt), _t.identity(v)) for v in variables)
        return created, made

    # The status' questions.

    def unresolved_checkpoint_nodes(self):
        out = []
        # as TF's: the saved values not restored (objects that hold none are not asked for)
        for i, node in enumerate(self._nodes):
            if node.get("key") and node["key"] not in self._restored:
                out.append((i, node))
        for var_id, _, _, key in self._pending_slots:
            out.append((var_id, {"key": key}))
        out += [(node_id, {"key": key}) for node_id, key in self._missed if key is not None]
        return out

    def unmatched_objects(self):
        root = self._root_ref()
        if root is None:
            return []
        with _t.legacy_names(self._legacy):
            order, _ = _t.walk(root)
        return [obj for obj, _ in order if _t.identity(obj) not in self._bound_ids and _t.is_variable(obj)]


class CheckpointLoadStatus:
    """What restore() returns: asserts about how the saved graph matched the program's objects."""

    def __init__(self, restoration):
        self._r = restoration

    def assert_consumed(self):
        """Every saved value restored and every object of the program matched (AssertionError if not)."""
        _retry_all()
        unresolved = self._r.unresolved_checkpoint_nodes()
        if unresolved:
            node_id, node = unresolved[0]
            where = _checkpoint_description(self._r._graph, node_id)
            what = f" (the value {node['key']})" if node.get("key") else ""
            raise AssertionError(f"Unresolved object in checkpoint {where}{what}: {len(unresolved)} saved object(s) "
                                 "or value(s) not matched to the program's objects")
        self.assert_existing_objects_matched()
        return self

    def assert_existing_objects_matched(self):
        """Every variable the program has now was restored (AssertionError if not)."""
        _retry_all()
        unmatched = self._r.unmatched_objects()
        for var_id, opt_id, slot, key in self._r._pending_slots:
            var, opt = self._r._bound.get(var_id), self._r._bound.get(opt_id)
            slot_var = self._r._slot_variable(opt, var, slot) if var is not None and opt is not None else None
            if slot_var is not None and slot_var is not _AMBIGUOUS:
                unmatched.append(slot_var)
        if unmatched:
            shown = unmatched[:10]
            raise AssertionError(f"Found {len(unmatched)} Python objects that were not bound to checkpointed values, "
                                 f"likely due to changes in the Python program. Showing {len(shown)} of "
                                 f"{len(unmatched)} unmatched objects: {shown}")
        return self

    def assert_nontrivial_match(self):
        """Something besides the root matched (AssertionError if not)."""
        _retry_all()
        if not any(i != 0 for i in self._r._bound):
            raise AssertionError(f"Nothing except the root object matched a checkpointed value. Typically this "
                                 f"means that the checkpoint does not match the Python program.")
        return self

    def expect_partial(self):
        """Silences warnings about values left unrestored (eagerflow prints none): returns self."""
        return self

    def run_restore_ops(self, session=None):
        """Eager restores run at once: nothing to run."""
        return None

    def initialize_or_restore(self, session=None):
        return None


class InitializationOnlyStatus:
    """What restore(None) returns: nothing is restored; the asserts say so."""

    def _no(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    def assert_consumed(self):
        self._no()

    def assert_existing_objects_matched(self):
        self._no()

    def assert_nontrivial_match(self):
        self._no()

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        return None

    def initialize_or_restore(self, session=None):
        return None


class Checkpoint:
    """tf.train.Checkpoint(root=None, **kwargs): saves and restores the objects given as keyword
    arguments (and those later set as attributes) with what they reference."""

    _ef_checkpoint_root = True

    def __init__(self, root=None, **kwargs):
        object.__setattr__(self, "_ef_deps", {})
        object.__setattr__(self, "_ef_root", root)
        object.__setattr__(self, "_ef_restorations", [])
        object.__setattr__(self, "_ef_save_counter", None)
        if root is not None and not _t.is_trackable(root):
            raise ValueError(f"`Checkpoint` was expecting root to be a trackable object (an object derived from "
                             f"`Trackable`), got {root!r}.")
        for name, value in sorted(kwargs.items()):
            if not _t.is_trackable(value):
                raise ValueError(f"`Checkpoint` was expecting {name} to be a trackable object (an object derived "
                                 f"from `Trackable`), got {value!r}. If you believe this object should be trackable "
                                 "(i.e. it is part of the TensorFlow Python API and manages state), please open an "
                                 "issue.")
            if root is not None and hasattr(root, name):
                raise ValueError(f"Cannot save checkpoint: the root object already has an attribute {name!r}.")
            setattr(self, name, value)

    def __setattr__(self, name, value):
        value = _t.wrap(value)
        object.__setattr__(self, name, value)
        if not name.startswith("_"):
            if _t.is_trackable(value):
                self._ef_deps[name] = value
            else:
                self._ef_deps.pop(name, None)
            _t.changed(self)

    def __delattr__(self, name):
        object.__delattr__(self, name)
        self._ef_deps.pop(name, None)

    def _ef_checkpoint_children(self):
        out = list(_t.children(self._ef_root)) if self._ef_root is not None else []
        out += list(self._ef_deps.items())
        if self._ef_save_counter is not None:
            out.append(("save_counter", self._ef_save_counter))
        return out

    @property
    def save_counter(self):
        """An int64 variable: how many times save() ran (restored with the rest)."""
        if self._ef_save_counter is None:
            object.__setattr__(self, "_ef_save_counter", _core.Variable(0, dtype=_core.DType.int64, trainable=False,
                                                                         name="save_counter"))
            _t.changed(self)
        return self._ef_save_counter

    def write(self, file_prefix, options=None):
        """Writes the checkpoint to exactly `file_prefix` (no numbering, no state file); returns it."""
        _retry_all()
        # saved with the values (TF's write() saves it only once save() or restore() made it; its
        # restore() then makes one that assert_consumed finds unmatched: eagerflow keeps it saved)
        self.save_counter  # noqa: B018
        file_prefix = os.fspath(file_prefix)
        graph, values = _graph(self, getattr(options, "experimental_skip_slot_variables", False))
        path = _io.write(file_prefix, graph, values)
        for callback in getattr(options, "experimental_write_callbacks", None) or []:
            callback(path) if _takes_argument(callback) else callback()
        return path

    def save(self, file_prefix, options=None):
        """Writes `file_prefix-<n>` (n: save_counter after counting this save) and records it in the
        directory's `checkpoint` file; returns the path."""
        self.save_counter.assign_add(1)
        file_prefix = os.fspath(file_prefix)
        path = self.write(f"{file_prefix}-{int(self.save_counter.numpy())}", options)
        directory = os.path.dirname(path)
        _io.write_state(directory, path, [path])
        return path

    def restore(self, save_path, options=None):
        """Restores from `save_path` (a path save() returned, or tf.train.latest_checkpoint's);
        values of objects not created yet are restored when they are. None: nothing restored."""
        if save_path is None:
            return InitializationOnlyStatus()
        save_path = os.fspath(save_path)
        if os.path.isdir(save_path) and not _io.exists(save_path):
            latest = latest_checkpoint(save_path)
            if latest is None:
                raise _core_errors().NotFoundError(None, None, f"Error when restoring from checkpoint at {save_path}: "
                                                   f"no checkpoint found in this directory")
            save_path = latest
        try:
            reader = _io.Reader(save_path)
        except _core_errors().NotFoundError as e:
            raise type(e)(None, None, f"Error when restoring from checkpoint at {save_path}: {e.message}\nPlease "
                          f"double-check that the path is correct.") from None
        self.save_counter  # noqa: B018 - restored as any other value
        restoration = _Restoration(self, reader, getattr(options, "experimental_skip_slot_variables", False))
        self._ef_restorations.append(restoration)
        return CheckpointLoadStatus(restoration)

    def read(self, save_path, options=None):
        """Restores a checkpoint write() wrote (as restore)."""
        return self.restore(save_path, options)


def _takes_argument(fn):
    import inspect
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params)


def _core_errors():
    from . import errors
    return errors


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The path of the newest checkpoint the directory's state file names, or None."""
    state = _io.read_state(os.fspath(checkpoint_dir), latest_filename or "checkpoint")
    if state is None:
        return None
    path = state["model_checkpoint_path"]
    return path if _io.exists(path) else None


def _prefix_of(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory {path}")
        return latest
    return path


class CheckpointReader:
    """tf.train.load_checkpoint's reader: the saved values by key."""

    def __init__(self, prefix):
        self._reader = _io.Reader(prefix)

    def get_tensor(self, tensor_str):
        return self._reader.get_tensor(tensor_str)

    def has_tensor(self, tensor_str):
        return self._reader.has_tensor(tensor_str)

    def _keys(self):
        return self._reader.keys() + ([_io.OBJECT_GRAPH_KEY] if self._reader.has_object_graph() else [])

    def get_variable_to_shape_map(self):
        return {k: self._reader.shape(k) for k in self._keys()}

    def get_variable_to_dtype_map(self):
        return {k: _core.DType.__members__[self._reader.dtype_name(k)] for k in self._keys()}


def load_checkpoint(ckpt_dir_or_file):
    """A reader of a checkpoint (a prefix, or a directory: its latest)."""
    return CheckpointReader(_prefix_of(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file):
    """[(key, shape)] of a checkpoint's values, sorted by key (the object graph's entry too, as TF's)."""
    reader = load_checkpoint(ckpt_dir_or_file)
    shapes = reader.get_variable_to_shape_map()
    return [(k, shapes[k]) for k in sorted(shapes)]


def load_variable(ckpt_dir_or_file, name):
    """One saved value, as a NumPy array (`name` a key; a trailing ':0' is dropped, as TF does)."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)
