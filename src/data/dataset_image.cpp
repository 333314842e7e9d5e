// image_folder: dir/<class>/<file>.png|.jpg|.jpeg, decoded with libpng (its simplified API)
// and libjpeg-turbo. A damaged file is an ef::Error naming it (never a crash); images larger
// than 2^28 pixels are refused before anything is allocated for them.
#include <png.h>
#include <cstdio>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <filesystem>

#include "core/checked.h"
#include "data/dataset_internal.h"
#include "eagerflow/io/safetensors.h"

namespace ef::data {
using detail::fail_data;
using detail::Flat;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMaxPixels = std::uint64_t{1} << 28;

struct Decoded {
  std::int64_t height = 0, width = 0, channels = 0;
  std::vector<std::uint8_t> pixels;
};

bool is_png(const std::vector<std::byte>& b) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  return b.size() >= 8 && std::memcmp(b.data(), sig, 8) == 0;
}
bool is_jpeg(const std::vector<std::byte>& b) {
  return b.size() >= 3 && b[0] == std::byte{0xFF} && b[1] == std::byte{0xD8} && b[2] == std::byte{0xFF};
}

Decoded decode_png(const std::vector<std::byte>& bytes, const std::string& path, int channels) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    fail_data(ErrorCode::data_loss, "image_folder: " + path + " is not a readable PNG: " + image.message);
  Decoded d;
  if (channels == 0) channels = (image.format & PNG_FORMAT_FLAG_COLOR ? 3 : 1) + (image.format & PNG_FORMAT_FLAG_ALPHA ? 1 : 0);
  if (channels == 2) channels = 4;  // gray + alpha: as RGBA
  image.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  if (static_cast<std::uint64_t>(image.width) * image.height > kMaxPixels) {
    png_image_free(&image);
    fail_data("image_folder: " + path + " is " + std::to_string(image.width) + "x" + std::to_string(image.height) +
              " pixels, more than 2^28");
  }
  d.height = image.height;
  d.width = image.width;
  d.channels = channels;
  d.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, d.pixels.data(), 0, nullptr))
    fail_data(ErrorCode::data_loss, "image_folder: " + path + " is a damaged PNG: " + image.message);
  return d;
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

Decoded decode_jpeg(const std::vector<std::byte>& bytes, const std::string& path, int channels) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_quiet;
  err.message[0] = 0;
  // No C++ objects with destructors live between setjmp and a longjmp: the error text is
  // copied into a plain buffer and thrown after.
  Decoded* d = new Decoded;
  std::vector<unsigned char>* volatile row = nullptr;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    delete d;
    delete row;
    fail_data(ErrorCode::data_loss, "image_folder: " + path + " is a damaged JPEG: " + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (static_cast<std::uint64_t>(cinfo.image_width) * cinfo.image_height > kMaxPixels) {
    std::snprintf(err.message, sizeof err.message, "%ux%u pixels, more than 2^28", cinfo.image_width, cinfo.image_height);
    std::longjmp(err.jump, 1);
  }
  int want = channels == 0 ? (cinfo.num_components == 1 ? 1 : 3) : channels;
  cinfo.out_color_space = want == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  int got = cinfo.output_components;
  d->height = cinfo.output_height;
  d->width = cinfo.output_width;
  d->channels = want;
  d->pixels.assign(static_cast<std::size_t>(d->height * d->width * want), 255);
  row = new std::vector<unsigned char>(static_cast<std::size_t>(d->width * got));
  while (cinfo.output_scanline < cinfo.output_height) {
    std::size_t y = cinfo.output_scanline;
    unsigned char* p = row->data();
    jpeg_read_scanlines(&cinfo, &p, 1);
    for (std::int64_t x = 0; x < d->width; ++x)
      for (int c = 0; c < std::min(got, want); ++c)
        d->pixels[(y * static_cast<std::size_t>(d->width) + static_cast<std::size_t>(x)) * static_cast<std::size_t>(want) + static_cast<std::size_t>(c)] =
            (*row)[static_cast<std::size_t>(x * got + c)];
  }
  delete row;
  row = nullptr;
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  Decoded out = std::move(*d);
  delete d;
  return out;
}

// Bilinear with half-pixel centers (TF 2's tf.image.resize default).
Tensor to_float(const Decoded& d, const std::optional<std::pair<std::int64_t, std::int64_t>>& size) {
  const std::int64_t c = d.channels;
  if (!size || (size->first == d.height && size->second == d.width)) {
    std::vector<float> v(d.pixels.begin(), d.pixels.end());
    return tensor(v, Shape{d.height, d.width, c});
  }
  const std::int64_t H = size->first, W = size->second;
  std::vector<float> out(static_cast<std::size_t>(H * W * c));
  auto at = [&](std::int64_t y, std::int64_t x, std::int64_t k) {
    return static_cast<float>(d.pixels[static_cast<std::size_t>((y * d.width + x) * c + k)]);
  };
  for (std::int64_t y = 0; y < H; ++y) {
    double sy = std::clamp((static_cast<double>(y) + 0.5) * static_cast<double>(d.height) / static_cast<double>(H) - 0.5, 0.0,
                           static_cast<double>(d.height - 1));
    std::int64_t y0 = static_cast<std::int64_t>(sy), y1 = std::min(y0 + 1, d.height - 1);
    double fy = sy - static_cast<double>(y0);
    for (std::int64_t x = 0; x < W; ++x) {
      double sx = std::clamp((static_cast<double>(x) + 0.5) * static_cast<double>(d.width) / static_cast<double>(W) - 0.5, 0.0,
                             static_cast<double>(d.width - 1));
      std::int64_t x0 = static_cast<std::int64_t>(sx), x1 = std::min(x0 + 1, d.width - 1);
      double fx = sx - static_cast<double>(x0);
      for (std::int64_t k = 0; k < c; ++k) {
        double top = at(y0, x0, k) * (1 - fx) + at(y0, x1, k) * fx;
        double bottom = at(y1, x0, k) * (1 - fx) + at(y1, x1, k) * fx;
        out[static_cast<std::size_t>((y * W + x) * c + k)] = static_cast<float>(top * (1 - fy) + bottom * fy);
      }
    }
  }
  return tensor(out, Shape{H, W, c});
}

Decoded decode(const std::string& path, int channels) {
  std::vector<std::byte> bytes = io::read_file(path, std::size_t{1} << 30);
  if (is_png(bytes)) return decode_png(bytes, path, channels);
  if (is_jpeg(bytes)) return decode_jpeg(bytes, path, channels);
  fail_data("image_folder: " + path + " is neither a PNG nor a JPEG (by its first bytes)");
}

bool image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

struct ImageFolderNode final : detail::Node {
  std::vector<std::pair<std::string, std::int64_t>> files;
  ImageFolderOptions options;
  int channels;
  ImageFolderNode(ElementSpec s, std::vector<std::pair<std::string, std::int64_t>> f, ImageFolderOptions o, int ch)
      : Node(std::move(s)), files(std::move(f)), options(o), channels(ch) {}
  std::int64_t cardinality() const override { return static_cast<std::int64_t>(files.size()); }
  std::unique_ptr<detail::IteratorImpl> iterate() const override {
    struct It final : detail::IteratorImpl {
      const ImageFolderNode* node;
      std::size_t i = 0;
      bool next(Flat& out) override {
        if (i >= node->files.size()) return false;
        const auto& [path, label] = node->files[i];
        Decoded d = decode(path, node->channels);
        out.clear();
        out.push_back(to_float(d, node->options.image_size));
        out.push_back(scalar<std::int64_t>(label));
        detail::check_element(node->spec, out, "image_folder (" + path + ")", static_cast<std::int64_t>(i));
        ++i;
        return true;
      }
    };
    auto it = std::make_unique<It>();
    it->node = this;
    return it;
  }
};

}  // namespace

std::vector<std::string> Dataset::image_folder_classes(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail_data("image_folder: " + dir + " is not a folder");
  std::vector<std::string> classes;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory()) classes.push_back(e.path().filename().string());
  if (ec) fail_data("image_folder: cannot list " + dir + ": " + ec.message());
  std::sort(classes.begin(), classes.end());
  return classes;
}

Dataset Dataset::image_folder(const std::string& dir, ImageFolderOptions options) {
  if (options.channels < 0 || options.channels > 4 || options.channels == 2)
    fail_data("image_folder: channels must be 0 (as stored), 1, 3 or 4, got " + std::to_string(options.channels));
  if (options.image_size && (options.image_size->first < 1 || options.image_size->second < 1 ||
                             !checked_product({options.image_size->first, options.image_size->second},
                                              static_cast<std::int64_t>(kMaxPixels))))
    fail_data("image_folder: image_size must be positive and at most 2^28 pixels, got (" +
              std::to_string(options.image_size->first) + ", " + std::to_string(options.image_size->second) + ")");
  std::vector<std::string> classes = image_folder_classes(dir);
  if (classes.empty()) fail_data("image_folder: " + dir + " has no class sub-folders (dir/<class>/<image>)");
  std::vector<std::pair<std::string, std::int64_t>> files;
  for (std::size_t c = 0; c < classes.size(); ++c) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(dir) / classes[c], ec))
      if (e.is_regular_file() && image_name(e.path())) names.push_back(e.path().string());
    std::sort(names.begin(), names.end());
    for (auto& n : names) files.emplace_back(std::move(n), static_cast<std::int64_t>(c));
  }
  if (files.empty()) fail_data("image_folder: " + dir + " has no .png/.jpg/.jpeg files in its class folders");
  int channels = options.channels;
  if (channels == 0) channels = static_cast<int>(decode(files[0].first, 0).channels);
  std::int64_t h = options.image_size ? options.image_size->first : kDynamic;
  std::int64_t w = options.image_size ? options.image_size->second : kDynamic;
  ElementSpec spec{Structure::tuple, {}, {TensorSpec{DType::float32, Shape{h, w, channels}, {}}, TensorSpec{DType::int64, Shape{}, {}}}};
  return Dataset(std::make_shared<ImageFolderNode>(std::move(spec), std::move(files), options, channels));
}

}  // namespace ef::data
