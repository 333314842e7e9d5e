#pragma once
// TF's image codecs (tf.io.decode_png / decode_jpeg / decode_bmp / decode_image, encode_png /
// encode_jpeg, is_jpeg, extract_jpeg_shape) as ops on string scalars (src/io/image_codec.cpp):
// libpng and libjpeg-turbo, decoded images uint8 [height, width, channels].
#include <string>

#include "eagerflow/core/tensor.h"

namespace ef::io {

// channels 0: the file's own (gray 1, gray+alpha 2, RGB 3, RGBA 4); 1, 3 or 4 convert.
// dtype uint8, or uint16 (8-bit values scaled by 257, as TF's).
Tensor decode_png(const Tensor& contents, int channels = 0, DType dtype = DType::uint8);
// dct_method "INTEGER_FAST" or "INTEGER_ACCURATE" ("" is TF's default, the fast one).
Tensor decode_jpeg(const Tensor& contents, int channels = 0, const std::string& dct_method = "");
// crop_window int32 [y, x, height, width]: that window of the decoded image.
Tensor decode_and_crop_jpeg(const Tensor& contents, const Tensor& crop_window, int channels = 0,
                            const std::string& dct_method = "");
Tensor decode_bmp(const Tensor& contents, int channels = 0);  // uncompressed 24- and 32-bit
// PNG, JPEG or BMP by the first bytes (GIF is not supported).
Tensor decode_image(const Tensor& contents, int channels = 0, DType dtype = DType::uint8);

// compression -1..9 (zlib's level; only the size of the file depends on it).
Tensor encode_png(const Tensor& image, int compression = -1);
struct JpegOptions {
  int quality = 95;  // 0..100
  bool progressive = false, optimize_size = false, chroma_downsampling = true;
  std::string density_unit = "in";  // "in" or "cm"
  int x_density = 300, y_density = 300;
};
Tensor encode_jpeg(const Tensor& image, const JpegOptions& options = {});

Tensor is_jpeg(const Tensor& contents);                                             // bool scalar
Tensor extract_jpeg_shape(const Tensor& contents, DType output_type = DType::int32);  // [h, w, c]

}  // namespace ef::io
