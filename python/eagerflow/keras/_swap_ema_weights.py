"""keras.callbacks.SwapEMAWeights: evaluate and predict with the optimizer's moving averages of
the weights (an optimizer made with use_ema=True), and optionally end each epoch with them."""
from .._training import Callback


class SwapEMAWeights(Callback):
    """Swaps the model's trainable weights with their EMA (the optimizer's "average" slots) for
    evaluate/predict, and back afterwards; with swap_on_epoch, also at each epoch's end (the
    averages stay in the model after the last epoch), as Keras 3's."""

    def __init__(self, swap_on_epoch=False):
        super().__init__()
        self.swap_on_epoch = swap_on_epoch
        self._ema_weights_in_model = False

    def _pairs(self):
        optimizer = self.model.optimizer
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)
        if not getattr(optimizer, "use_ema", False):
            raise ValueError("SwapEMAWeights must be used when `use_ema=True` is set on the optimizer. Received: "
                             f"use_ema={getattr(optimizer, 'use_ema', False)}")
        variables = list(self.model.trainable_variables)
        return list(zip(variables, optimizer._ema_averages(variables)))

    def _swap_variables(self):
        for variable, average in self._pairs():
            held = variable.value()
            variable.assign(average.value())
            average.assign(held)

    def _finalize_ema_values(self):
        for variable, average in self._pairs():
            average.assign(variable.value())

    def on_epoch_begin(self, epoch, logs=None):
        if self.swap_on_epoch and self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = False

    def on_epoch_end(self, epoch, logs=None):
        if self.swap_on_epoch and not self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = True
            epochs = (getattr(self, "params", None) or {}).get("epochs")
            if epochs is not None and epoch == epochs - 1:
                self._finalize_ema_values()

    def on_test_begin(self, logs=None):
        if not self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = True

    def on_test_end(self, logs=None):
        if self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = False

    def on_predict_begin(self, logs=None):
        if not self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = True

    def on_predict_end(self, logs=None):
        if self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = False
