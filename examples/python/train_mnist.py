"""Keras training from Python: an MLP on the MNIST test files (../shared/data/mnist beside the
checkout, or $EF_MNIST_DIR), with a callback written in Python and EarlyStopping.
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
history = model.fit(x[:8000], y[:8000], batch_size=128, epochs=4, validation_data=(x[8000:], y[8000:]),
                    callbacks=[Report(), keras.callbacks.EarlyStopping(monitor="val_loss", patience=1)])
loss, accuracy = model.evaluate(x[8000:], y[8000:], verbose=0)
print(f"test loss {loss:.4f}, accuracy {accuracy:.4f}; the train step traced {model.tracing_count()} time(s)")
