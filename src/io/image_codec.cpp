// TF's image codecs as ops: decode (PNG, JPEG, BMP by their first bytes, as TF's decode ops all
// are), encode (PNG, JPEG) and the JPEG header queries. Decoded sizes are known only when the op
// runs: the shapes are dynamic in a trace.
#include <png.h>
#include <cstdio>
#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <vector>

#include "eagerflow/core/string_tensor.h"
#include "eagerflow/io/image_codec.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "ops/op_factories.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

constexpr std::uint64_t kMaxPixels = std::uint64_t{1} << 28;

struct Pixels {
  std::int64_t height = 0, width = 0, channels = 0;
  std::vector<std::uint8_t> data;
};

enum class ImageFormat : std::uint8_t { any, png, jpeg, bmp };
const char* const kFormatNames[] = {"image", "png", "jpeg", "bmp"};

bool png_bytes(std::string_view b) { return b.size() >= 8 && std::memcmp(b.data(), "\x89PNG\r\n\x1a\n", 8) == 0; }
bool jpeg_bytes(std::string_view b) { return b.size() >= 3 && std::memcmp(b.data(), "\xFF\xD8\xFF", 3) == 0; }
bool bmp_bytes(std::string_view b) { return b.size() >= 2 && b[0] == 'B' && b[1] == 'M'; }

void too_large(const char* op, std::uint64_t w, std::uint64_t h) {
  fail(op, "the image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels, more than 2^28");
}

// Channel conversion as TF's: gray -> RGB repeats, RGB -> gray is the luma, an alpha channel
// added is opaque and dropped is dropped.
Pixels with_channels(Pixels p, int channels) {
  if (channels == 0 || channels == p.channels) return p;
  Pixels out{p.height, p.width, channels, {}};
  out.data.resize(static_cast<std::size_t>(p.height * p.width * channels));
  for (std::size_t i = 0; i < static_cast<std::size_t>(p.height * p.width); ++i) {
    const std::uint8_t* s = &p.data[i * static_cast<std::size_t>(p.channels)];
    std::uint8_t* d = &out.data[i * static_cast<std::size_t>(channels)];
    bool color = p.channels >= 3;
    std::uint8_t gray = color ? static_cast<std::uint8_t>((s[0] * 299 + s[1] * 587 + s[2] * 114 + 500) / 1000) : s[0];
    std::uint8_t alpha = p.channels == 2 || p.channels == 4 ? s[p.channels - 1] : 255;
    if (channels == 1) d[0] = gray;
    else if (channels == 2) d[0] = gray, d[1] = alpha;
    else {
      for (int c = 0; c < 3; ++c) d[c] = color ? s[c] : gray;
      if (channels == 4) d[3] = alpha;
    }
  }
  return out;
}

Pixels decode_png_pixels(const char* op, std::string_view bytes, int channels) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    fail(ErrorCode::invalid_argument, op, std::string("not a readable PNG: ") + image.message);
  int own = (image.format & PNG_FORMAT_FLAG_COLOR ? 3 : 1) + (image.format & PNG_FORMAT_FLAG_ALPHA ? 1 : 0);
  int want = channels == 0 ? own : channels;
  image.format = want == 1 ? PNG_FORMAT_GRAY : want == 2 ? PNG_FORMAT_GA : want == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  if (static_cast<std::uint64_t>(image.width) * image.height > kMaxPixels) {
    png_image_free(&image);
    too_large(op, image.width, image.height);
  }
  Pixels p{image.height, image.width, want, {}};
  p.data.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, p.data.data(), 0, nullptr))
    fail(ErrorCode::invalid_argument, op, std::string("a damaged PNG: ") + image.message);
  return p;
}

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};
void jpeg_fail(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}
void jpeg_quiet(j_common_ptr, int) {}

// The JPEG's header (header_only) or its pixels, as RGB or gray (channels 0: the file's).
Pixels decode_jpeg_pixels(const char* op, std::string_view bytes, int channels, bool accurate, bool header_only) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_quiet;
  err.message[0] = 0;
  // Nothing with a destructor lives across setjmp: the pixels are a raw allocation until the end.
  Pixels* volatile out = new Pixels;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    delete out;
    fail(ErrorCode::invalid_argument, op, std::string("a damaged JPEG: ") + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (static_cast<std::uint64_t>(cinfo.image_width) * cinfo.image_height > kMaxPixels) {
    std::snprintf(err.message, sizeof err.message, "%ux%u pixels, more than 2^28", cinfo.image_width, cinfo.image_height);
    std::longjmp(err.jump, 1);
  }
  int own = cinfo.num_components == 1 ? 1 : 3;
  int want = channels == 0 ? own : channels == 1 ? 1 : 3;
  out->height = cinfo.image_height;
  out->width = cinfo.image_width;
  out->channels = header_only ? cinfo.num_components : want;
  if (!header_only) {
    cinfo.out_color_space = want == 1 ? JCS_GRAYSCALE : JCS_RGB;
    cinfo.dct_method = accurate ? JDCT_ISLOW : JDCT_IFAST;  // TF's default is the fast one
    jpeg_start_decompress(&cinfo);
    out->data.resize(static_cast<std::size_t>(out->height * out->width * want));
    while (cinfo.output_scanline < cinfo.output_height) {
      unsigned char* row = out->data.data() + static_cast<std::size_t>(cinfo.output_scanline) *
                                                  static_cast<std::size_t>(out->width * want);
      jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
  }
  jpeg_destroy_decompress(&cinfo);
  Pixels p = std::move(*out);
  delete out;
  if (!header_only && channels == 4) p = with_channels(std::move(p), 4);
  return p;
}

std::uint32_t le32(std::string_view b, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}

// Uncompressed BMPs of 24 or 32 bits (rows bottom-up unless the height is negative; BGR(A)).
Pixels decode_bmp_pixels(const char* op, std::string_view b) {
  if (b.size() < 54) fail(op, "a BMP shorter than its headers (" + std::to_string(b.size()) + " bytes)");
  std::uint32_t offset = le32(b, 10), header = le32(b, 14);
  auto width = static_cast<std::int32_t>(le32(b, 18)), height = static_cast<std::int32_t>(le32(b, 22));
  std::uint32_t bpp = le32(b, 28) & 0xFFFF, compression = le32(b, 30);
  if (header < 40) fail(op, "an unsupported BMP header of " + std::to_string(header) + " bytes");
  if (bpp != 24 && bpp != 32) fail(op, "only 24- and 32-bit BMPs are supported, got " + std::to_string(bpp) + " bits");
  if (compression != 0 && !(compression == 3 && bpp == 32)) fail(op, "compressed BMPs are not supported");
  bool top_down = height < 0;
  std::int64_t h = top_down ? -static_cast<std::int64_t>(height) : height, w = width;
  if (w <= 0 || h <= 0) fail(op, "a BMP of " + std::to_string(w) + "x" + std::to_string(h) + " pixels");
  if (static_cast<std::uint64_t>(w) * static_cast<std::uint64_t>(h) > kMaxPixels) too_large(op, static_cast<std::uint64_t>(w), static_cast<std::uint64_t>(h));
  int c = static_cast<int>(bpp / 8);
  std::uint64_t row = (static_cast<std::uint64_t>(w) * static_cast<std::uint64_t>(c) + 3) / 4 * 4;
  if (offset > b.size() || row * static_cast<std::uint64_t>(h) > b.size() - offset)
    fail(op, "a truncated BMP: its pixels need " + std::to_string(row * static_cast<std::uint64_t>(h)) + " bytes");
  Pixels p{h, w, c, {}};
  p.data.resize(static_cast<std::size_t>(h * w * c));
  for (std::int64_t y = 0; y < h; ++y) {
    const char* src = b.data() + offset + static_cast<std::size_t>(row) * static_cast<std::size_t>(top_down ? y : h - 1 - y);
    for (std::int64_t x = 0; x < w; ++x) {
      std::uint8_t* d = &p.data[static_cast<std::size_t>((y * w + x) * c)];
      const auto* s = reinterpret_cast<const unsigned char*>(src + x * c);
      d[0] = s[2], d[1] = s[1], d[2] = s[0];
      if (c == 4) d[3] = s[3];
    }
  }
  return p;
}

class DecodeImage : public MergeablePrimitive<DecodeImage> {
 public:
  DecodeImage(ImageFormat format, int channels, DType dtype, bool accurate, bool crop)
      : format_(format), channels_(channels), dtype_(dtype), accurate_(accurate), crop_(crop) {
    if (channels < 0 || channels > 4) fail(name(), "channels must be 0, 1, 2, 3 or 4, got " + std::to_string(channels));
    if (dtype != DType::uint8 && dtype != DType::uint16)
      fail(kWrongType, name(), "dtype must be uint8 or uint16, got " + std::string(name_of(dtype)));
  }
  const char* name() const override {
    static const char* const names[] = {"decode_image", "decode_png", "decode_jpeg", "decode_bmp"};
    return crop_ ? "decode_and_crop_jpeg" : names[static_cast<int>(format_)];
  }
  OpParams parameters() const override {
    return OpParams().add("format", Word{kFormatNames[static_cast<int>(format_)]}).add("channels", channels_)
        .add("dtype", dtype_).add_flag("accurate", accurate_).add_flag("crop", crop_);
  }
  bool takes_strings() const override { return true; }
  bool takes_bfloat16() const override { return true; }  // uint8 and uint16 images as they are
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, crop_ ? 2 : 1);
    if (in[0].dtype() != DType::string || in[0].rank() != 0)
      fail(kWrongType, name(), "contents must be a string scalar, got " + in[0].spec().str());
    if (crop_ && (in[1].dtype() != DType::int32 || in[1].shape() != Shape{4}))
      fail(name(), "crop_window must be int32 [4] (y, x, height, width), got " + in[1].spec().str());
    return {{dtype_, Shape{kDynamic, kDynamic, channels_ == 0 ? kDynamic : channels_}, {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override {
    std::string_view b = in[0].item<std::string_view>();
    Pixels p;
    if (png_bytes(b)) p = decode_png_pixels(name(), b, channels_);
    else if (jpeg_bytes(b)) p = decode_jpeg_pixels(name(), b, channels_, accurate_, false);
    else if (bmp_bytes(b)) p = with_channels(decode_bmp_pixels(name(), b), channels_);
    else fail(name(), "unknown image file format: one of JPEG, PNG or BMP required (GIF is not supported)");
    if (crop_) p = cropped(p, in[1].to_vector<std::int32_t>());
    Shape shape{p.height, p.width, p.channels};
    out[0] = Tensor::empty(dtype_, shape);
    if (dtype_ == DType::uint8) {
      if (!p.data.empty()) std::memcpy(out[0].raw_mutable_data(), p.data.data(), p.data.size());
    } else {
      auto* d = static_cast<std::uint16_t*>(out[0].raw_mutable_data());
      for (std::size_t i = 0; i < p.data.size(); ++i) d[i] = static_cast<std::uint16_t>(p.data[i] * 257);
    }
  }

 private:
  Pixels cropped(const Pixels& p, const std::vector<std::int32_t>& w) const {
    std::int64_t y = w[0], x = w[1], h = w[2], wd = w[3];
    if (y < 0 || x < 0 || h <= 0 || wd <= 0 || y + h > p.height || x + wd > p.width)
      fail(name(), "crop window [" + std::to_string(y) + ", " + std::to_string(x) + ", " + std::to_string(h) + ", " +
                       std::to_string(wd) + "] is not inside the " + std::to_string(p.height) + "x" +
                       std::to_string(p.width) + " image");
    Pixels c{h, wd, p.channels, {}};
    std::size_t rowb = static_cast<std::size_t>(wd * p.channels);
    c.data.resize(static_cast<std::size_t>(h) * rowb);
    for (std::int64_t r = 0; r < h; ++r)
      std::memcpy(&c.data[static_cast<std::size_t>(r) * rowb], &p.data[static_cast<std::size_t>(((y + r) * p.width + x) * p.channels)], rowb);
    return c;
  }
  ImageFormat format_;
  int channels_;
  DType dtype_;
  bool accurate_, crop_;
};

class EncodeImage : public MergeablePrimitive<EncodeImage> {
 public:
  EncodeImage(ImageFormat format, int compression, io::JpegOptions jpeg) : format_(format), compression_(compression), jpeg_(std::move(jpeg)) {
    if (format == ImageFormat::png && (compression < -1 || compression > 9))
      fail(name(), "compression must be in -1..9, got " + std::to_string(compression));
    if (format == ImageFormat::jpeg && (jpeg_.quality < 0 || jpeg_.quality > 100))
      fail(name(), "quality must be in 0..100, got " + std::to_string(jpeg_.quality));
    if (format == ImageFormat::jpeg && jpeg_.density_unit != "in" && jpeg_.density_unit != "cm")
      fail(name(), "density_unit must be 'in' or 'cm', got '" + jpeg_.density_unit + "'");
  }
  const char* name() const override { return format_ == ImageFormat::png ? "encode_png" : "encode_jpeg"; }
  OpParams parameters() const override {
    if (format_ == ImageFormat::png) return OpParams().add("compression", compression_);
    return OpParams().add("quality", jpeg_.quality).add_flag("progressive", jpeg_.progressive)
        .add_flag("optimize_size", jpeg_.optimize_size).add_flag("no_chroma_downsampling", !jpeg_.chroma_downsampling)
        .add("density_unit", jpeg_.density_unit).add("x_density", jpeg_.x_density).add("y_density", jpeg_.y_density);
  }
  bool takes_strings() const override { return true; }
  bool takes_bfloat16() const override { return true; }  // uint8 and uint16 images as they are
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 1);
    const Tensor& x = in[0];
    bool png16 = format_ == ImageFormat::png && x.dtype() == DType::uint16;
    if (x.dtype() != DType::uint8 && !png16)
      fail(kWrongType, name(), std::string("takes uint8") + (format_ == ImageFormat::png ? " or uint16" : "") +
                                   " images, got " + x.spec().str() + " (tf.image.convert_image_dtype converts)");
    std::int64_t c = x.rank() == 3 ? x.shape()[2] : -1;
    bool ok = format_ == ImageFormat::png ? (c >= 1 && c <= 4) : (c == 1 || c == 3);
    if (x.rank() != 3 || (c != kDynamic && !ok))
      fail(name(), std::string("takes an image [height, width, channels] with ") +
                       (format_ == ImageFormat::png ? "1 to 4" : "1 or 3") + " channels, got " + x.spec().str());
    return {{DType::string, Shape{}, {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override {
    const Tensor& x = in[0];
    std::int64_t h = x.shape()[0], w = x.shape()[1], c = x.shape()[2];
    if (static_cast<std::uint64_t>(h) * static_cast<std::uint64_t>(w) > kMaxPixels) too_large(name(), static_cast<std::uint64_t>(w), static_cast<std::uint64_t>(h));
    std::string bytes = format_ == ImageFormat::png ? png(x, h, w, c) : jpeg(x, h, w, c);
    out[0] = string_scalar(bytes);
  }

 private:
  std::string png(const Tensor& x, std::int64_t h, std::int64_t w, std::int64_t c) const {
    png_image image;
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = static_cast<png_uint_32>(w);
    image.height = static_cast<png_uint_32>(h);
    bool wide = x.dtype() == DType::uint16;
    image.format = (c == 1 ? PNG_FORMAT_GRAY : c == 2 ? PNG_FORMAT_GA : c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA) |
                   (wide ? PNG_FORMAT_FLAG_LINEAR : 0);
    png_alloc_size_t size = 0;
    if (!png_image_write_get_memory_size(image, size, 0, x.raw_data(), 0, nullptr))
      fail(name(), std::string("libpng could not encode the image: ") + image.message);
    std::string out(size, '\0');
    if (!png_image_write_to_memory(&image, out.data(), &size, 0, x.raw_data(), 0, nullptr))
      fail(name(), std::string("libpng could not encode the image: ") + image.message);
    out.resize(size);
    return out;
  }
  std::string jpeg(const Tensor& x, std::int64_t h, std::int64_t w, std::int64_t c) const {
    jpeg_compress_struct cinfo;
    JpegError err;
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = jpeg_fail;
    err.mgr.emit_message = jpeg_quiet;
    unsigned char* volatile buffer = nullptr;
    unsigned long size = 0;
    if (setjmp(err.jump)) {
      jpeg_destroy_compress(&cinfo);
      std::free(buffer);
      fail(name(), std::string("libjpeg could not encode the image: ") + err.message);
    }
    jpeg_create_compress(&cinfo);
    unsigned char* mem = nullptr;
    jpeg_mem_dest(&cinfo, &mem, &size);
    cinfo.image_width = static_cast<JDIMENSION>(w);
    cinfo.image_height = static_cast<JDIMENSION>(h);
    cinfo.input_components = static_cast<int>(c);
    cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, jpeg_.quality, TRUE);
    if (jpeg_.progressive) jpeg_simple_progression(&cinfo);
    cinfo.optimize_coding = jpeg_.optimize_size ? TRUE : FALSE;
    if (!jpeg_.chroma_downsampling && c == 3)
      for (int k = 0; k < 3; ++k) cinfo.comp_info[k].h_samp_factor = cinfo.comp_info[k].v_samp_factor = 1;
    cinfo.density_unit = jpeg_.density_unit == "in" ? 1 : 2;
    cinfo.X_density = static_cast<UINT16>(jpeg_.x_density);
    cinfo.Y_density = static_cast<UINT16>(jpeg_.y_density);
    jpeg_start_compress(&cinfo, TRUE);
    const auto* data = static_cast<const unsigned char*>(x.raw_data());
    while (cinfo.next_scanline < cinfo.image_height) {
      auto* row = const_cast<unsigned char*>(data + static_cast<std::size_t>(cinfo.next_scanline) * static_cast<std::size_t>(w * c));
      jpeg_write_scanlines(&cinfo, &row, 1);
      buffer = mem;
    }
    jpeg_finish_compress(&cinfo);
    buffer = mem;
    std::string out(reinterpret_cast<const char*>(mem), size);
    jpeg_destroy_compress(&cinfo);
    std::free(mem);
    return out;
  }
  ImageFormat format_;
  int compression_;
  io::JpegOptions jpeg_;
};

// is_jpeg (bool scalar) and extract_jpeg_shape ([h, w, c]) read only the first bytes or the header.
class JpegHeader : public MergeablePrimitive<JpegHeader> {
 public:
  JpegHeader(bool shape, DType out) : shape_(shape), out_(out) {
    if (shape && out != DType::int32 && out != DType::int64)
      fail(kWrongType, name(), "output_type must be int32 or int64, got " + std::string(name_of(out)));
  }
  const char* name() const override { return shape_ ? "extract_jpeg_shape" : "is_jpeg"; }
  OpParams parameters() const override { return shape_ ? OpParams().add("output_type", out_) : OpParams(); }
  bool takes_strings() const override { return true; }
  bool takes_bfloat16() const override { return true; }  // uint8 and uint16 images as they are
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 1);
    if (in[0].dtype() != DType::string || in[0].rank() != 0)
      fail(kWrongType, name(), "contents must be a string scalar, got " + in[0].spec().str());
    return {shape_ ? TensorSpec{out_, Shape{3}, {}} : TensorSpec{DType::bool_, Shape{}, {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override {
    std::string_view b = in[0].item<std::string_view>();
    if (!shape_) {
      out[0] = scalar(jpeg_bytes(b));
      return;
    }
    if (!jpeg_bytes(b)) fail(name(), "the contents are not a JPEG (they do not start with FF D8 FF)");
    Pixels p = decode_jpeg_pixels(name(), b, 0, false, true);
    out[0] = cast(tensor<std::int64_t>({p.height, p.width, p.channels}), out_);
  }

 private:
  bool shape_;
  DType out_;
};

Tensor decode(ImageFormat f, const Tensor& contents, int channels, DType dtype, const std::string& dct) {
  if (!dct.empty() && dct != "INTEGER_FAST" && dct != "INTEGER_ACCURATE")
    fail("decode_jpeg", "dct_method must be '', 'INTEGER_FAST' or 'INTEGER_ACCURATE', got '" + dct + "'");
  return dispatch1(DecodeImage(f, channels, dtype, dct == "INTEGER_ACCURATE", false), {contents});
}

ImageFormat format_named(const std::string& w) {
  for (int k = 0; k < 4; ++k)
    if (w == kFormatNames[k]) return static_cast<ImageFormat>(k);
  fail("decode_image", "unknown format '" + w + "'");
}

}  // namespace

void detail::add_image_codec_factories(detail::OpFactories& f) {
  for (const char* n : {"decode_image", "decode_png", "decode_jpeg", "decode_bmp", "decode_and_crop_jpeg"})
    f[n] = [](const OpParams& p) {
      return std::make_shared<DecodeImage>(format_named(p.word("format")), static_cast<int>(p.integer("channels")),
                                           p.dtype("dtype"), p.flag("accurate"), p.flag("crop"));
    };
  f["encode_png"] = [](const OpParams& p) {
    return std::make_shared<EncodeImage>(ImageFormat::png, static_cast<int>(p.integer("compression")), io::JpegOptions{});
  };
  f["encode_jpeg"] = [](const OpParams& p) {
    io::JpegOptions o{static_cast<int>(p.integer("quality")), p.flag("progressive"), p.flag("optimize_size"),
                      !p.flag("no_chroma_downsampling"), p.text("density_unit"), static_cast<int>(p.integer("x_density")),
                      static_cast<int>(p.integer("y_density"))};
    return std::make_shared<EncodeImage>(ImageFormat::jpeg, -1, std::move(o));
  };
  f["is_jpeg"] = [](const OpParams&) { return std::make_shared<JpegHeader>(false, DType::bool_); };
  f["extract_jpeg_shape"] = [](const OpParams& p) { return std::make_shared<JpegHeader>(true, p.dtype("output_type")); };
}

void detail::register_image_codec_rules() {
  const std::string why = "image codecs have no ONNX form";
  register_op_rules<DecodeImage>({.runs_per_example = true, .onnx_unsupported = why});
  register_op_rules<EncodeImage>({.runs_per_example = true, .onnx_unsupported = why});
  register_op_rules<JpegHeader>({.runs_per_example = true, .onnx_unsupported = why});
}

namespace io {

Tensor decode_png(const Tensor& contents, int channels, DType dtype) { return decode(ImageFormat::png, contents, channels, dtype, ""); }
Tensor decode_jpeg(const Tensor& contents, int channels, const std::string& dct_method) {
  return decode(ImageFormat::jpeg, contents, channels, DType::uint8, dct_method);
}
Tensor decode_and_crop_jpeg(const Tensor& contents, const Tensor& crop_window, int channels, const std::string& dct_method) {
  if (!dct_method.empty() && dct_method != "INTEGER_FAST" && dct_method != "INTEGER_ACCURATE")
    fail("decode_and_crop_jpeg", "dct_method must be '', 'INTEGER_FAST' or 'INTEGER_ACCURATE', got '" + dct_method + "'");
  return dispatch1(DecodeImage(ImageFormat::jpeg, channels, DType::uint8, dct_method == "INTEGER_ACCURATE", true),
                   {contents, crop_window});
}
Tensor decode_bmp(const Tensor& contents, int channels) { return decode(ImageFormat::bmp, contents, channels, DType::uint8, ""); }
Tensor decode_image(const Tensor& contents, int channels, DType dtype) { return decode(ImageFormat::any, contents, channels, dtype, ""); }
Tensor encode_png(const Tensor& image, int compression) { return dispatch1(EncodeImage(ImageFormat::png, compression, {}), {image}); }
Tensor encode_jpeg(const Tensor& image, const JpegOptions& options) { return dispatch1(EncodeImage(ImageFormat::jpeg, -1, options), {image}); }
Tensor is_jpeg(const Tensor& contents) { return dispatch1(JpegHeader(false, DType::bool_), {contents}); }
Tensor extract_jpeg_shape(const Tensor& contents, DType output_type) { return dispatch1(JpegHeader(true, output_type), {contents}); }

}  // namespace io
}  // namespace ef
