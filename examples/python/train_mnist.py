"""Keras training from Python: an MLP on the MNIST test files (../shared/data/mnist beside the
checkout, or $EF_MNIST_DIR), fed by an ef.data.Dataset (shuffle, a traced map on two threads,
batch, prefetch), with a callback written in Python and EarlyStopping.
Falls back to generated digits when the files are not there."""
import eagerflow as ef

keras = ef.keras

folder = ef.data.find_mnist()
x, y = ef.data.load_mnist_test(folder) if folder else ef.data.synthetic_digits(10000)


class Report(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        print(f"  (Python callback) epoch {epoch + 1}: val_accuracy {logs['val_accuracy']:.4f}")


model = keras.Sequential([keras.Input(shape=(28, 28)), keras.layers.Flatten(),
                          keras.layers.Dense(256, activation="relu"), keras.layers.Dense(10)])
model.summary()
model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
train = (ef.data.Dataset.from_tensor_slices((x[:8000], y[:8000]))
         .shuffle(8000, seed=1)
         .map(lambda image, label: (image * 2.0 - 1.0, label), num_parallel_calls=2)  # traced once
         .batch(128)
         .prefetch(ef.data.AUTOTUNE))
val = ef.data.Dataset.from_tensor_slices((x[8000:] * 2.0 - 1.0, y[8000:])).batch(500)
history = model.fit(train, epochs=4, validation_data=val,
                    callbacks=[Report(), keras.callbacks.EarlyStopping(monitor="val_loss", patience=1)])
loss, accuracy = model.evaluate(val, verbose=0)
print(f"test loss {loss:.4f}, accuracy {accuracy:.4f}; the train step traced {model.tracing_count()} time(s)")
