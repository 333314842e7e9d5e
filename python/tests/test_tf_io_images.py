"""tf.io / tf.image codecs and color spaces as a TF user calls them; TF 2.21's numbers written in."""
import numpy as np
import pytest

import eagerflow as tf


def _img(h, w, c, seed=0):
    return (np.random.default_rng(seed).random((h, w, c)) * 255).astype(np.uint8)


def test_png_round_trip_and_tf_names():
    img = _img(6, 5, 3)
    png = tf.io.encode_png(img)
    assert png.dtype == tf.string and png.shape == ()
    back = tf.io.decode_png(png)
    assert back.dtype == tf.uint8
    np.testing.assert_array_equal(back.numpy(), img)
    np.testing.assert_array_equal(tf.image.decode_png(png).numpy(), img)
    np.testing.assert_array_equal(tf.io.decode_image(png).numpy(), img)
    assert tf.io.decode_png(png, dtype=tf.uint16).numpy()[0, 0, 0] == int(img[0, 0, 0]) * 257
    f = tf.io.decode_image(png, dtype=tf.float32).numpy()
    np.testing.assert_allclose(f, img / 255.0, rtol=1e-6)
    assert tf.io.decode_png(tf.io.encode_png(img[..., :1]), channels=3).numpy()[0, 0].tolist() == [img[0, 0, 0]] * 3
    assert not bool(tf.io.is_jpeg(png))


def test_jpeg_and_header_queries(tmp_path):
    yy, xx = np.mgrid[0:37, 0:53]
    img = np.stack([yy * 6, xx * 4, (yy + xx) * 2], -1).astype(np.uint8)  # smooth: JPEG keeps it closely
    jpg = tf.io.encode_jpeg(img, quality=90)
    assert bool(tf.io.is_jpeg(jpg)) and bool(tf.image.is_jpeg(jpg))
    assert tf.io.extract_jpeg_shape(jpg).numpy().tolist() == [37, 53, 3]
    dec = tf.io.decode_jpeg(jpg)
    assert dec.shape == (37, 53, 3) and dec.dtype == tf.uint8
    assert np.abs(dec.numpy().astype(int) - img.astype(int)).mean() < 3
    assert tf.io.decode_and_crop_jpeg(jpg, [2, 3, 10, 20]).shape == (10, 20, 3)
    assert tf.io.decode_jpeg(jpg, channels=1).shape == (37, 53, 1)
    path = str(tmp_path / "a.jpg")
    tf.io.write_file(path, jpg)
    np.testing.assert_array_equal(tf.io.decode_jpeg(tf.io.read_file(path)).numpy(), dec.numpy())
    q = tf.image.adjust_jpeg_quality(img.astype(np.float32) / 255.0, 80)
    assert q.dtype == tf.float32 and q.shape == (37, 53, 3)


def test_decode_errors_are_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError, match="unknown image file format"):
        tf.io.decode_png(tf.constant(b"garbage"))
    png = tf.io.encode_png(_img(4, 4, 3)).numpy()
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.decode_png(png[:20])
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError)):
        tf.io.encode_png(np.zeros((2, 2, 3), np.float32))


def test_load_and_preprocess_pipeline_as_the_tutorials_write_it(tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"{i}.png"
        tf.io.write_file(str(p), tf.io.encode_png(_img(8 + i, 10, 3, seed=i)))
        paths.append(str(p))

    def load(path):
        image = tf.io.decode_png(tf.io.read_file(path), channels=3)
        image = tf.image.resize(tf.cast(image, tf.float32), [4, 4])
        return image / 255.0

    ds = tf.data.Dataset.from_tensor_slices(paths).map(load).batch(3)
    batch = next(iter(ds))
    assert batch.shape == (3, 4, 4, 3)
    assert 0.0 <= float(tf.reduce_min(batch)) and float(tf.reduce_max(batch)) <= 1.0


def test_color_spaces_equal_tfs():
    x = np.array([[[0.5118216276168823, 0.9504637122154236, 0.14415961503982544]]], np.float32)
    expected = {"rgb_to_yiq": [0.7273910641670227, -0.0022861449979245663, -0.34372907876968384],
                "yiq_to_rgb": [1.509949803352356, 0.1599825769662857, -0.29441356658935547],
                "rgb_to_yuv": [0.7273910641670227, -0.28701460361480713, -0.18911539018154144],
                "yuv_to_rgb": [0.6761467456817627, 0.05302619934082031, 2.443222761154175]}
    for name, want in expected.items():
        np.testing.assert_allclose(getattr(tf.image, name)(x).numpy()[0, 0], want, rtol=1e-5, atol=1e-6)
    rt = tf.image.yiq_to_rgb(tf.image.rgb_to_yiq(x))
    np.testing.assert_allclose(rt.numpy(), x, atol=1e-4)  # TF's two matrices are inverses to ~4 digits
