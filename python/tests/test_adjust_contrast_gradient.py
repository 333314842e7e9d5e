"""tf.image.adjust_contrast with a tensor factor: the same values as with a number, and a gradient
for the factor as well as the image (never a silent None), eagerly and traced."""
import numpy as np

import eagerflow as tf


def test_tensor_factor_has_a_gradient_and_the_same_values():
    rng = np.random.RandomState(0)
    image = tf.constant(rng.uniform(size=(2, 4, 5, 3)).astype("float32"))
    factor = tf.Variable(1.7)
    with tf.GradientTape() as tape:
        tape.watch(image)
        out = tf.image.adjust_contrast(image, factor)
        loss = tf.reduce_sum(out * out)
    np.testing.assert_allclose(out.numpy(), tf.image.adjust_contrast(image, 1.7).numpy(), rtol=1e-5, atol=1e-6)
    g_image, g_factor = tape.gradient(loss, [image, factor])
    x = image.numpy()
    mean = x.mean(axis=(1, 2), keepdims=True)
    y = (x - mean) * 1.7 + mean
    np.testing.assert_allclose(g_factor.numpy(), np.sum(2 * y * (x - mean)), rtol=1e-4)
    assert g_image is not None and g_image.shape == image.shape

    traced = tf.function(lambda im, f: tf.image.adjust_contrast(im, f))
    np.testing.assert_allclose(traced(image, tf.constant(0.5)).numpy(), tf.image.adjust_contrast(image, 0.5).numpy(),
                               rtol=1e-5, atol=1e-6)
