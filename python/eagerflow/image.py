"""ef.image: TensorFlow's tf.image with TF's names, argument names and defaults, over ef::image
(include/eagerflow/ops/image.h): compositions of the op table's ops, so each traces,
differentiates and vmaps as they do. Images are [batch, height, width, channels] or [height,
width, channels]; shape errors raise InvalidArgumentError (a ValueError), as TF's static checks."""
from . import _core

_im = _core._image

__all__ = [
    "ResizeMethod", "adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue", "adjust_saturation",
    "central_crop", "convert_image_dtype", "crop_and_resize", "hsv_to_rgb", "random_brightness", "random_contrast", "random_crop", "random_hue",
    "random_saturation", "resize_with_pad", "rgb_to_hsv",
    "crop_to_bounding_box", "extract_patches", "flip_left_right", "flip_up_down", "grayscale_to_rgb", "image_gradients",
    "pad_to_bounding_box", "per_image_standardization", "psnr", "random_flip_left_right", "random_flip_up_down",
    "resize", "resize_with_crop_or_pad", "rgb_to_grayscale", "rot90", "sobel_edges", "ssim", "ssim_multiscale", "total_variation",
    "transpose", "stateless_random_brightness", "stateless_random_contrast", "stateless_random_crop",
    "stateless_random_flip_left_right", "stateless_random_flip_up_down", "stateless_random_hue",
    "stateless_random_saturation", "adjust_jpeg_quality", "decode_and_crop_jpeg", "decode_bmp", "decode_image",
    "decode_jpeg", "decode_png", "encode_jpeg", "encode_png", "extract_jpeg_shape", "is_jpeg", "rgb_to_yiq", "rgb_to_yuv",
    "yiq_to_rgb", "yuv_to_rgb",
]


class ResizeMethod:
    """tf.image.ResizeMethod: the method names, as TF's (plain strings)."""
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


def flip_left_right(image):
    """tf.image.flip_left_right(image): the width axis reversed."""
    return _im.flip_left_right(image)


def flip_up_down(image):
    """tf.image.flip_up_down(image): the height axis reversed."""
    return _im.flip_up_down(image)


def rot90(image, k=1, name=None):
    """tf.image.rot90(image, k=1, name=None): k quarter turns counter-clockwise."""
    return _im.rot90(image, int(k))


def transpose(image, name=None):
    """tf.image.transpose(image, name=None): height and width swapped."""
    return _im.transpose(image)


def random_flip_left_right(image, seed=None):
    """tf.image.random_flip_left_right(image, seed=None): each image flipped with probability 1/2."""
    return _im.random_flip_left_right(image, seed)


def random_flip_up_down(image, seed=None):
    """tf.image.random_flip_up_down(image, seed=None): each image flipped with probability 1/2."""
    return _im.random_flip_up_down(image, seed)


def crop_and_resize(image, boxes, box_indices, crop_size, method="bilinear", extrapolation_value=0.0, name=None):
    """tf.image.crop_and_resize: [num_boxes, crop_height, crop_width, depth] samples of the boxes
    (normalized y1, x1, y2, x2) of image[box_indices], float32."""
    crop_height, crop_width = _size_pair(crop_size, "crop_size")
    return _im.crop_and_resize(image, boxes, box_indices, crop_height, crop_width, str(method), extrapolation_value)


def extract_patches(images, sizes, strides, rates, padding, name=None):
    """tf.image.extract_patches: every window flattened into the channel axis; sizes, strides and
    rates are [1, rows, cols, 1], padding 'VALID' or 'SAME'."""
    return _im.extract_patches(images, sizes, strides, rates, str(padding).upper())


def random_crop(value, size, seed=None, name=None):
    """tf.image.random_crop: a window of `size` (one entry per axis) at a random offset."""
    if hasattr(size, "numpy"):
        size = size.numpy().tolist()
    return _im.random_crop(value, size, seed)


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """tf.image.crop_to_bounding_box: the target window with its top-left corner at the offsets."""
    return _im.crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """tf.image.pad_to_bounding_box: the image at the offsets inside zeros of the target size."""
    return _im.pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width)


def central_crop(image, central_fraction):
    """tf.image.central_crop(image, central_fraction): the central part, central_fraction in (0, 1]."""
    return _im.central_crop(image, central_fraction)


def resize_with_crop_or_pad(image, target_height, target_width):
    """tf.image.resize_with_crop_or_pad: centered crop or zero padding to the target size."""
    return _im.resize_with_crop_or_pad(image, target_height, target_width)


def _size_pair(size, what="size"):
    try:
        dims = [int(d) for d in (size.numpy().tolist() if hasattr(size, "numpy") else size)]
    except (TypeError, ValueError) as e:
        raise ValueError(f"'{what}' must be a 1-D int32 Tensor of 2 elements: new_height, new_width; got {size!r}") from e
    if len(dims) != 2:
        raise ValueError(f"'{what}' must be a 1-D Tensor of 2 elements: new_height, new_width; got {size!r}")
    return dims


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False, antialias=False, name=None):
    """tf.image.resize (TF2): bilinear, nearest and bicubic with half-pixel centers, area, and
    TF's scale_and_translate kernels (lanczos3/5, gaussian, mitchellcubic, and antialias). The
    result is float32 except for nearest, which keeps the dtype."""
    new_height, new_width = _size_pair(size)
    return _im.resize(images, new_height, new_width, str(method), bool(preserve_aspect_ratio), bool(antialias))


def resize_with_pad(image, target_height, target_width, method=ResizeMethod.BILINEAR, antialias=False):
    """tf.image.resize_with_pad: resized keeping the aspect ratio, then centered in zero padding."""
    return _im.resize_with_pad(image, target_height, target_width, str(method), bool(antialias))


def rgb_to_hsv(images, name=None):
    """tf.image.rgb_to_hsv: RGB in [0, 1] to hue, saturation, value (all in [0, 1])."""
    return _im.rgb_to_hsv(images)


def hsv_to_rgb(images, name=None):
    """tf.image.hsv_to_rgb: the inverse of rgb_to_hsv."""
    return _im.hsv_to_rgb(images)


def adjust_saturation(image, saturation_factor, name=None):
    """tf.image.adjust_saturation: saturation scaled (clipped to [0, 1]), computed in float32."""
    return _im.adjust_saturation(image, saturation_factor)


def adjust_hue(image, delta, name=None):
    """tf.image.adjust_hue: hue rotated by delta (in [-1, 1]), computed in float32."""
    return _im.adjust_hue(image, delta)


def adjust_gamma(image, gamma=1, gain=1):
    """tf.image.adjust_gamma: gain * image ** gamma (gamma >= 0), computed in float32."""
    return _im.adjust_gamma(image, gamma, gain)


def random_brightness(image, max_delta, seed=None):
    """tf.image.random_brightness: adjust_brightness by one delta drawn from [-max_delta, max_delta)."""
    return _im.random_brightness(image, max_delta, seed)


def random_contrast(image, lower, upper, seed=None):
    """tf.image.random_contrast: adjust_contrast by one factor drawn from [lower, upper)."""
    return _im.random_contrast(image, lower, upper, seed)


def random_saturation(image, lower, upper, seed=None):
    """tf.image.random_saturation: adjust_saturation by one factor drawn from [lower, upper)."""
    return _im.random_saturation(image, lower, upper, seed)


def random_hue(image, max_delta, seed=None):
    """tf.image.random_hue: adjust_hue by one delta drawn from [-max_delta, max_delta), max_delta <= 0.5."""
    return _im.random_hue(image, max_delta, seed)


def rgb_to_grayscale(images, name=None):
    """tf.image.rgb_to_grayscale: luma with TF's weights, 3 channels to 1, the images' dtype kept."""
    return _im.rgb_to_grayscale(images)


def grayscale_to_rgb(images, name=None):
    """tf.image.grayscale_to_rgb: the single channel repeated 3 times."""
    return _im.grayscale_to_rgb(images)


def adjust_brightness(image, delta):
    """tf.image.adjust_brightness(image, delta): image + delta (computed in float32)."""
    return _im.adjust_brightness(image, delta)


def adjust_contrast(images, contrast_factor):
    """tf.image.adjust_contrast: (x - mean) * contrast_factor + mean, per channel over height and width.
    A tensor factor on floating images is the same formula in ops, so that a tape sees both
    inputs (the C++ op takes the factor as a number, which no gradient reaches)."""
    if isinstance(contrast_factor, (_core.Tensor, _core.Variable)):
        images = _core.convert_to_tensor(images)
        if images.dtype.is_floating:
            import eagerflow as _ef
            factor = _ef.cast(contrast_factor, images.dtype)
            mean = _ef.reduce_mean(images, axis=[-3, -2], keepdims=True)
            return (images - mean) * factor + mean
        if _core._in_trace():
            raise TypeError("adjust_contrast: a symbolic contrast_factor needs floating images (cast them first)")
        contrast_factor = float(contrast_factor.numpy())
    return _im.adjust_contrast(images, contrast_factor)


def per_image_standardization(image):
    """tf.image.per_image_standardization: zero mean, unit variance per image (stddev floored at
    1/sqrt(elements)), float32."""
    return _im.per_image_standardization(image)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """tf.image.convert_image_dtype: floats cast; integers scale to [0, 1] (uint8: / 255) and back
    (* (MAX + 0.5), truncated; clamped first with saturate); integers rescale by a power of two."""
    image = _core.convert_to_tensor(image)
    from ._tf_misc import as_dtype
    dtype = as_dtype(dtype)
    if not (image.dtype.is_floating or image.dtype.is_integer):
        raise AttributeError("image dtype must be either floating point or integer")  # TF's class
    if not (dtype.is_floating or dtype.is_integer):
        raise AttributeError("dtype must be either floating point or integer")
    return _im.convert_image_dtype(image, dtype, bool(saturate))


def image_gradients(image):
    """tf.image.image_gradients(image): (dy, dx) forward differences of a 4-D batch."""
    return tuple(_im.image_gradients(image))


def total_variation(images, name=None):
    """tf.image.total_variation: the sum of absolute neighbour differences, per image for a batch."""
    return _im.total_variation(images)


def psnr(a, b, max_val, name=None):
    """tf.image.psnr: the peak signal-to-noise ratio per image (float32)."""
    return _im.psnr(a, b, max_val)


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03, return_index_map=False):
    """tf.image.ssim: structural similarity per image with a Gaussian window (float32)."""
    return _im.ssim(img1, img2, max_val, filter_size, filter_sigma, k1, k2, bool(return_index_map))


_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)  # Wang, Simoncelli and Bovik (2003)


def ssim_multiscale(img1, img2, max_val, power_factors=_MSSSIM_WEIGHTS, filter_size=11, filter_sigma=1.5, k1=0.01,
                    k2=0.03):
    """tf.image.ssim_multiscale: MS-SSIM per image over len(power_factors) scales (float32)."""
    factors = [float(f) for f in (power_factors.numpy().tolist() if hasattr(power_factors, "numpy") else power_factors)]
    return _im.ssim_multiscale(img1, img2, max_val, factors, filter_size, filter_sigma, k1, k2)


def sobel_edges(image):
    """tf.image.sobel_edges: [batch, height, width, channels, 2] holding the (dy, dx) responses."""
    return _im.sobel_edges(image)


# ---- stateless forms: TF's seed is a shape [2] integer pair; the same pair gives the same result
# on every call. The numbers differ from TF's (another generator), the guarantees are the same. ----

def _key(seed):
    values = seed.numpy().tolist() if hasattr(seed, "numpy") else list(seed)
    if len(values) != 2 or not all(isinstance(v, int) or hasattr(v, "__index__") for v in values):
        raise ValueError(f"seed must be a shape [2] integer tensor or pair, got {seed!r}")
    a, b = (int(v) & 0xFFFFFFFF for v in values)
    return (a << 32) | b


def stateless_random_flip_left_right(image, seed):
    """tf.image.stateless_random_flip_left_right: each image flipped with probability 1/2."""
    return _im.stateless_random_flip_left_right(image, _key(seed))


def stateless_random_flip_up_down(image, seed):
    """tf.image.stateless_random_flip_up_down: each image flipped with probability 1/2."""
    return _im.stateless_random_flip_up_down(image, _key(seed))


def stateless_random_crop(value, size, seed, name=None):
    """tf.image.stateless_random_crop: a window of `size` at an offset fixed by the seed."""
    if hasattr(size, "numpy"):
        size = size.numpy().tolist()
    return _im.stateless_random_crop(value, size, _key(seed))


def stateless_random_brightness(image, max_delta, seed):
    """tf.image.stateless_random_brightness: adjust_brightness by a delta in [-max_delta, max_delta)."""
    return _im.stateless_random_brightness(image, max_delta, _key(seed))


def stateless_random_contrast(image, lower, upper, seed):
    """tf.image.stateless_random_contrast: adjust_contrast by a factor in [lower, upper)."""
    return _im.stateless_random_contrast(image, lower, upper, _key(seed))


def stateless_random_saturation(image, lower, upper, seed=None):
    """tf.image.stateless_random_saturation: adjust_saturation by a factor in [lower, upper)."""
    if seed is None:
        raise ValueError("stateless_random_saturation needs a seed (a shape [2] integer pair)")
    return _im.stateless_random_saturation(image, lower, upper, _key(seed))


def stateless_random_hue(image, max_delta, seed):
    """tf.image.stateless_random_hue: adjust_hue by a delta in [-max_delta, max_delta), max_delta <= 0.5."""
    return _im.stateless_random_hue(image, max_delta, _key(seed))


# ---- TF's tf.image names for the codecs of tf.io, and JPEG quality changes through them.
def _codecs():
    from . import io
    return io


def decode_png(contents, channels=0, dtype=None, name=None):
    return _codecs().decode_png(contents, channels, dtype)


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False, acceptable_fraction=1,
                dct_method="", name=None):
    return _codecs().decode_jpeg(contents, channels, ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction,
                                 dct_method)


def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                         acceptable_fraction=1, dct_method="", name=None):
    return _codecs().decode_and_crop_jpeg(contents, crop_window, channels, ratio, fancy_upscaling,
                                          try_recover_truncated, acceptable_fraction, dct_method)


def decode_bmp(contents, channels=0, name=None):
    return _codecs().decode_bmp(contents, channels)


def decode_image(contents, channels=None, dtype=None, name=None, expand_animations=True):
    return _codecs().decode_image(contents, channels, dtype, name, expand_animations)


def encode_png(image, compression=-1, name=None):
    return _codecs().encode_png(image, compression)


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False, chroma_downsampling=True,  # noqa: A002
                density_unit="in", x_density=300, y_density=300, xmp_metadata="", name=None):
    return _codecs().encode_jpeg(image, format, quality, progressive, optimize_size, chroma_downsampling, density_unit,
                                 x_density, y_density, xmp_metadata)


def is_jpeg(contents, name=None):
    return _codecs().is_jpeg(contents)


def extract_jpeg_shape(contents, output_type=None, name=None):
    return _codecs().extract_jpeg_shape(contents, output_type)


def adjust_jpeg_quality(image, jpeg_quality, dct_method="", name=None):
    """The image after a JPEG round trip at `jpeg_quality` (0..100), in its own dtype (floats are
    converted to uint8 and back, as TF's)."""
    from . import _core
    img = _core.convert_to_tensor(image)
    dtype = img.dtype
    u8 = convert_image_dtype(img, _core.DType.uint8, saturate=True)
    out = _codecs().decode_jpeg(_codecs().encode_jpeg(u8, quality=int(jpeg_quality)), channels=int(u8.shape[-1]),
                                dct_method=dct_method)
    return convert_image_dtype(out, dtype)


# TF's color-space matrices (images [..., 3] times the matrix: tensordot over the last axis).
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617], [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021], [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512], [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _color_matrix(images, matrix, fn):
    from . import _core
    x = _core.convert_to_tensor(images)
    if not x.dtype.is_floating:
        raise TypeError(f"tf.image.{fn} takes floating images, got {x.dtype.name}")
    if x._shape_tuple[-1] not in (3, None):
        raise ValueError(f"tf.image.{fn} takes images [..., 3], got shape {x._shape_tuple}")
    from .linalg import tensordot
    k = _core.constant(matrix, dtype=x.dtype)
    return tensordot(x, k, [[x.ndim - 1], [0]])


def rgb_to_yiq(images):
    return _color_matrix(images, _RGB_TO_YIQ, "rgb_to_yiq")


def yiq_to_rgb(images):
    return _color_matrix(images, _YIQ_TO_RGB, "yiq_to_rgb")


def rgb_to_yuv(images):
    return _color_matrix(images, _RGB_TO_YUV, "rgb_to_yuv")


def yuv_to_rgb(images):
    return _color_matrix(images, _YUV_TO_RGB, "yuv_to_rgb")
