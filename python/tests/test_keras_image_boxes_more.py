"""Keras 3's CutMix, RandomErasing, RandomPerspective and Equalization: Keras' rules checked with
NumPy, inference identity, configs, ef.function and fit."""
import numpy as np
import pytest

import eagerflow as ef

L = ef.keras.layers
RS = np.random.RandomState(0)
X = RS.uniform(0, 255, (2, 6, 7, 3)).astype(np.float32)


def _equalize_numpy(x, bins=256, value_range=(0, 255)):
    """Keras 3.15's Equalization: one histogram per channel over the whole batch."""
    lo, hi = value_range
    out = np.empty_like(x)
    for c in range(x.shape[-1]):
        ch = (x[..., c] - lo) / (hi - lo) * 255
        idx = np.clip((ch * (bins - 1) / 255).astype(np.int32), 0, bins - 1)
        hist = np.bincount(idx.ravel(), minlength=bins).astype(np.float64)
        if np.count_nonzero(hist) <= 1:
            eq = ch
        else:
            cdf = np.cumsum(hist)
            cmin = cdf[np.nonzero(cdf)[0][0]]
            den = cdf[-1] - cmin or 1.0
            table = np.clip(np.round((cdf - cmin) * 255 / den), 0, 255)
            eq = table[np.clip((ch / 255 * (bins - 1)), 0, bins - 1).astype(np.int32)]
        out[..., c] = eq / 255 * (hi - lo) + lo
    return out


@pytest.mark.parametrize("bins,value_range", [(256, (0, 255)), (64, (0, 255)), (256, (0, 1))])
def test_equalization_matches_keras_rule(bins, value_range):
    x = (RS.beta(2, 5, (2, 6, 7, 3)) * 255).astype(np.float32)
    if value_range == (0, 1):
        x = x / 255
    layer = L.Equalization(value_range=value_range, bins=bins)
    want = _equalize_numpy(x.astype(np.float64), bins, value_range)
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(ef.function(lambda t: layer(t))(ef.constant(x)).numpy(), want, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)


def test_equalization_flat_channel_is_kept():
    x = np.full((1, 3, 3, 1), 40.0, np.float32)
    np.testing.assert_array_equal(L.Equalization()(x).numpy(), x)


def test_cutmix_pastes_one_box_and_mixes_labels_by_its_area():
    x = np.stack([np.zeros((8, 8, 2)), np.ones((8, 8, 2))]).astype(np.float32)
    layer = L.CutMix(seed=4)
    for _ in range(4):
        out = layer({"images": x, "labels": np.eye(2, dtype=np.float32)})
        img, lab = out["images"].numpy(), out["labels"].numpy()
        np.testing.assert_allclose(lab.sum(1), [1, 1], rtol=1e-5)
        for i in range(2):
            changed = img[i, ..., 0] != x[i, ..., 0]
            if changed.any():  # the pasted pixels form one axis-aligned box, equal in both channels
                rows, cols = np.nonzero(changed)
                assert changed[rows.min():rows.max() + 1, cols.min():cols.max() + 1].all()
                np.testing.assert_array_equal(img[i, ..., 0], img[i, ..., 1])
                assert lab[i, 1 - i] > 0  # the partner's label gets the box's share
    single = x[0]
    np.testing.assert_array_equal(layer(single).numpy(), single)  # Keras: one image is left alone
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)


def test_random_erasing_fills_a_box_of_the_drawn_size():
    x = np.full((3, 10, 10, 3), 100.0, np.float32)
    layer = L.RandomErasing(factor=(1, 1), scale=(0.25, 0.25), fill_value=(1, 2, 3), seed=1)
    y = layer(x).numpy()
    for c, v in enumerate((1, 2, 3)):
        # sides sqrt(0.25) of 10 -> a 5 x 5 box
        np.testing.assert_array_equal((y[..., c] == v).sum((1, 2)), [25, 25, 25])
    noise = L.RandomErasing(factor=(1, 1), scale=(0.3, 0.3), value_range=(0, 1), seed=2)(x / 100).numpy()
    assert noise.min() >= 0 and noise.max() <= 1 and (noise != 1).any()
    np.testing.assert_array_equal(L.RandomErasing(factor=(0, 0), seed=1)(x).numpy(), x)
    with pytest.raises(ValueError):
        L.RandomErasing(fill_value=(1, 2))


def test_random_perspective_projective_sampling_matches_ops_perspective_transform():
    from eagerflow.keras import _prep_image as pi
    from eagerflow.keras.ops.image import _homography, perspective_transform
    h, w = X.shape[1:3]
    start = np.array([[[0, 0], [w - 1, 0], [0, h - 1], [w - 1, h - 1]]] * 2, np.float32)
    end = start * (1 + np.array([[[0.1, -0.2], [0.2, 0.1], [-0.1, 0.05], [0.05, -0.1]]] * 2, np.float32))
    want = perspective_transform(X, start, end, fill_value=0).numpy()
    m = ef.cast(_homography(ef.cast(start, "float64"), ef.cast(end, "float64")), "float32")
    col = [ef.reshape(m[:, i], [-1, 1, 1]) for i in range(8)]
    got = pi._transform(ef.constant(X), col[0:3], col[3:6], "constant", "bilinear", 0.0, col[6:8]).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-2)


def test_random_perspective_layer():
    np.testing.assert_allclose(L.RandomPerspective(factor=(1, 1), scale=0.0)(X).numpy(), X, atol=1e-3)
    y = L.RandomPerspective(factor=(1, 1), scale=0.6, seed=3)(X).numpy()
    # corner (0, 0) stays where it is (Keras moves each corner by corner * d)
    np.testing.assert_allclose(y[:, 0, 0], X[:, 0, 0], rtol=1e-4, atol=1e-2)
    assert not np.allclose(y, X)
    with pytest.raises(ValueError):
        L.RandomPerspective(scale=1.5)


ALL = [lambda: L.CutMix(0.5, seed=1), lambda: L.RandomErasing(0.7, (0.1, 0.2), 3.0, seed=1),
       lambda: L.RandomPerspective(0.8, 0.4, "nearest", 2.0, seed=1), lambda: L.Equalization((0, 255), 128)]


@pytest.mark.parametrize("make", ALL)
def test_config_function_and_fit(make):
    layer = make()
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config
    assert L.deserialize(L.serialize(layer)).get_config() == config
    traced = ef.function(lambda t: layer(t, training=True))
    assert traced(ef.constant(X)).shape == X.shape
    np.testing.assert_array_equal(layer(X, training=False).numpy(), X)
    model = ef.keras.Sequential([ef.keras.Input((6, 7, 3)), make(), L.Flatten(), L.Dense(1)])
    model.compile("sgd", "mse")
    h = model.fit(X / 255, np.ones((2, 1), np.float32), epochs=1, verbose=0)
    assert np.isfinite(h.history["loss"]).all()


BOXES = {"boxes": np.array([[[1, 2, 5, 6], [0, 0, 3, 3], [0, 0, 5, 5]]]), "labels": np.array([[1, 2, 3]])}


def test_max_num_bounding_boxes_cuts_and_pads_as_keras():
    images = np.random.RandomState(1).randint(0, 255, (1, 8, 8, 3)).astype(np.uint8)
    cut = L.MaxNumBoundingBoxes(2, bounding_box_format="xyxy")({"images": images, "bounding_boxes": BOXES})
    np.testing.assert_array_equal(cut["bounding_boxes"]["boxes"].numpy(), [[[1, 2, 5, 6], [0, 0, 3, 3]]])
    np.testing.assert_array_equal(cut["bounding_boxes"]["labels"].numpy(), [[1, 2]])
    assert cut["bounding_boxes"]["boxes"].dtype == ef.float32  # Keras densifies boxes as float32
    np.testing.assert_array_equal(np.asarray(cut["images"]), images)
    pad = L.MaxNumBoundingBoxes(5, fill_value=-3, bounding_box_format="xyxy")({"images": images,
                                                                             "bounding_boxes": BOXES})
    np.testing.assert_array_equal(pad["bounding_boxes"]["labels"].numpy(), [[1, 2, 3, -3, -3]])
    np.testing.assert_array_equal(pad["bounding_boxes"]["boxes"].numpy()[0, 3:], -3 * np.ones((2, 4)))
    plain = L.MaxNumBoundingBoxes(3)(images)
    assert plain.dtype == ef.uint8 and np.array_equal(plain.numpy(), images)
    with pytest.raises(ValueError, match="bounding box format"):
        L.MaxNumBoundingBoxes(3)({"images": images, "bounding_boxes": BOXES})
    with pytest.raises(KeyError):
        L.MaxNumBoundingBoxes(3, bounding_box_format="xyxy")({"images": images, "bounding_boxes": {
            **BOXES, "scores": np.ones((1, 3))}})


def test_max_num_bounding_boxes_unknown_box_count_traces_and_config():
    layer = L.MaxNumBoundingBoxes(4, fill_value=-2, bounding_box_format="xyxy")
    fn = ef.function(lambda b, lab: layer({"images": ef.zeros([1, 2, 2, 3]),
                                           "bounding_boxes": {"boxes": b, "labels": lab}})["bounding_boxes"]["labels"])
    for n in (0, 3, 6):
        out = fn(ef.ones([2, n, 4]), ef.ones([2, n], ef.int64)).numpy()
        want = np.full((2, 4), -2)
        want[:, :min(n, 4)] = 1
        np.testing.assert_array_equal(out, want)
    config = layer.get_config()
    again = L.MaxNumBoundingBoxes.from_config(config)
    assert (again.max_number, again.fill_value, again.bounding_box_format) == (4, -2, "xyxy")


@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
@pytest.mark.parametrize("order", [0, 1])
def test_elastic_sampler_is_keras_ops_map_coordinates(mode, order):
    from eagerflow.keras._prep_elastic import _sample
    from eagerflow.keras.ops.image import map_coordinates
    rs = np.random.RandomState(1)
    ys = rs.uniform(-3, 9, (2, 6, 7)).astype(np.float32)
    xs = rs.uniform(-3, 10, (2, 6, 7)).astype(np.float32)
    got = _sample(ef.constant(X), ef.constant(ys), ef.constant(xs), order, mode, 7.0).numpy()
    want = np.stack([np.stack([map_coordinates(X[b, :, :, c], np.stack([ys[b], xs[b]]), order, mode, 7.0).numpy()
                               for c in range(3)], -1) for b in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


def test_random_elastic_transform():
    x = RS.uniform(0, 255, (2, 20, 24, 3)).astype(np.float32)
    np.testing.assert_array_equal(L.RandomElasticTransform(scale=0.0)(x).numpy(), x)
    np.testing.assert_array_equal(L.RandomElasticTransform(factor=(0, 0))(x).numpy(), x)
    layer = L.RandomElasticTransform(factor=(1, 1), scale=(1, 1), seed=2)
    y = layer(x).numpy()
    assert y.shape == x.shape and not np.allclose(y, x) and y.min() >= 0 and y.max() <= 255
    # a flat image stays flat whatever the displacement (reflect fill reads only the image)
    flat = np.full((1, 20, 24, 3), 42.0, np.float32)
    np.testing.assert_allclose(layer(flat).numpy(), flat, rtol=1e-5)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    config = layer.get_config()
    assert config["scale"] == (1, 1) and config["fill_mode"] == "reflect"
    assert L.RandomElasticTransform.from_config(config).get_config() == config
    assert ef.function(lambda t: layer(t))(ef.constant(x)).shape == x.shape
    with pytest.raises(NotImplementedError):
        L.RandomElasticTransform(fill_mode="smear")


CLAHE_X = (np.arange(30).reshape(1, 5, 6, 1) * 37 % 251).astype(np.float32)
# Recorded from keras 3.15.1 (TensorFlow backend):
# ContrastLimitedAdaptiveHistogramEqualization(clip_limit=2.0, tile_grid_size=(2, 2))(CLAHE_X)
KERAS_CLAHE = [[0.0, 40.706, 77.961, 112.612, 151.08, 189.94], [222.071, 9.509, 48.817, 83.552, 120.758, 160.987],
               [192.394, 231.18, 17.814, 54.155, 90.769, 130.199], [161.995, 199.963, 238.781, 24.14, 61.454, 100.235],
               [131.63, 170.122, 209.072, 246.453, 33.265, 72.482]]


def test_clahe_matches_keras():
    layer = L.ContrastLimitedAdaptiveHistogramEqualization(clip_limit=2.0, tile_grid_size=(2, 2))
    np.testing.assert_allclose(layer(CLAHE_X).numpy()[0, :, :, 0], KERAS_CLAHE, atol=2e-3)
    np.testing.assert_allclose(layer(CLAHE_X, training=False).numpy()[0, :, :, 0], KERAS_CLAHE, atol=2e-3)
    np.testing.assert_allclose(ef.function(lambda t: layer(t))(ef.constant(CLAHE_X)).numpy()[0, :, :, 0],
                               KERAS_CLAHE, atol=2e-3)
    np.testing.assert_allclose(layer(CLAHE_X[0]).numpy()[:, :, 0], KERAS_CLAHE, atol=2e-3)  # one image


def test_clahe_value_range_dtype_and_data_format():
    x = (RS.beta(2, 5, (2, 13, 18, 3)) * 255).astype(np.float32)
    layer = L.ContrastLimitedAdaptiveHistogramEqualization(tile_grid_size=(3, 4))
    y = layer(x).numpy()
    in01 = L.ContrastLimitedAdaptiveHistogramEqualization(value_range=(0, 1), tile_grid_size=(3, 4))(x / 255).numpy()
    np.testing.assert_allclose(in01 * 255, y, rtol=1e-4, atol=1e-2)
    as_uint8 = L.ContrastLimitedAdaptiveHistogramEqualization(tile_grid_size=(3, 4))(x.astype(np.uint8))
    assert as_uint8.dtype == ef.uint8  # Keras casts the result back to the input's dtype
    first = L.ContrastLimitedAdaptiveHistogramEqualization(tile_grid_size=(3, 4), data_format="channels_first")
    np.testing.assert_allclose(first(np.transpose(x, [0, 3, 1, 2])).numpy(), np.transpose(y, [0, 3, 1, 2]),
                               rtol=1e-5, atol=1e-3)
    # a flat channel: the clipped excess spread over all levels moves it to 92.58807 (keras 3.15.1's value)
    flat = L.ContrastLimitedAdaptiveHistogramEqualization(tile_grid_size=(2, 2))(np.full((1, 4, 4, 1), 90.0,
                                                                                       np.float32))
    np.testing.assert_allclose(flat.numpy(), 92.58807, atol=1e-3)
    config = layer.get_config()
    assert (config["clip_limit"], config["tile_grid_size"], config["data_format"]) == (4.0, (3, 4), "channels_last")
    assert L.deserialize(L.serialize(layer)).get_config() == config
