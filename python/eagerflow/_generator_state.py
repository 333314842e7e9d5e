"""tf.random.Generator in checkpoints: its state as a variable named 'state' (TF's name), holding
[seed, draws so far]. Saving writes the generator's current state; restoring it sets the
generator back, so the draws after a restore repeat those after the save (TF's guarantee).

eagerflow's generator keeps its state in the C++ seed generator rather than in a variable (the
traced draws read its counter), so this variable is a view made for the checkpoint: filled when
the checkpoint looks at the generator, and read back into the generator when a restore assigns it.
TF's checkpoints of a Generator hold Philox's 3-word state; eagerflow's 2 words are not
interchangeable with them."""
import numpy as _np

from . import _core


class GeneratorState(_core.Variable):
    """The 'state' variable of one Generator; assigning it (a restore) resets the generator."""

    def assign(self, value, *args, **kwargs):
        out = super().assign(value, *args, **kwargs)
        values = _np.asarray(self.numpy()).reshape(-1)
        generator = self._ef_generator
        seed = int(values[0]) & ((1 << 64) - 1)
        if seed == generator._gen.seed:
            generator._gen.draws = int(values[1])  # in place: functions that traced draws keep drawing from it
        else:
            generator.reset(values)
        return out


def children(generator):
    """[('state', its variable)], the variable holding the generator's current state."""
    state = generator.state
    var = generator.__dict__.get("_ef_state_var")
    if var is None:
        var = GeneratorState(state, trainable=False, name="state")
        var._ef_generator = generator
        generator.__dict__["_ef_state_var"] = var
    else:
        _core.Variable.assign(var, state)  # a refresh, not a restore
    return [("state", var)]
