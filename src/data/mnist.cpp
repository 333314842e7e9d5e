#include "eagerflow/data/mnist.h"

#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random.h"

namespace ef::data {
namespace {

// The whole (decompressed) file; gzread reads plain files as they are.
std::vector<unsigned char> read_all(const std::string& path) {
  // A FIFO would block the open until a writer comes, /dev/zero would never end: only
  // regular files (after symlinks) are data files.
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) fail(kFileNotFound, "mnist", "cannot open '" + path + "': no such file");
  if (!std::filesystem::is_regular_file(status))
    fail(ErrorCode::failed_precondition, "mnist", "'" + path + "' is not a regular file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) fail(ErrorCode::permission_denied, "mnist", "cannot open '" + path + "'");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(f, gzclose);
  std::vector<unsigned char> data;
  unsigned char buf[1 << 16];
  while (true) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      fail(ErrorCode::data_loss, "mnist", "'" + path + "' is damaged: " + (msg ? msg : "read error"));
    }
    if (n == 0) break;
    data.insert(data.end(), buf, buf + n);
    // MNIST's largest file is 47 MB: a bound that stops a decompression bomb early.
    if (data.size() > (std::size_t{1} << 28)) fail("mnist", "'" + path + "' decompresses to more than 256 MB: not an MNIST file");
  }
  return data;
}

std::uint32_t big_endian(const std::vector<unsigned char>& d, std::size_t at) {
  return (std::uint32_t{d[at]} << 24) | (std::uint32_t{d[at + 1]} << 16) | (std::uint32_t{d[at + 2]} << 8) | d[at + 3];
}

// Checks the header (magic, dims) and returns the dims.
std::vector<std::int64_t> idx_dims(const std::vector<unsigned char>& d, const std::string& path, std::uint32_t magic, int rank) {
  if (d.size() < 4)
    fail(ErrorCode::data_loss, "mnist",
         "'" + path + "' is truncated: " + std::to_string(d.size()) + " bytes, no IDX header");
  if (big_endian(d, 0) != magic)
    fail("mnist", "'" + path + "' is not an IDX file of this kind: magic 0x" + [&] {
      char b[16];
      std::snprintf(b, sizeof b, "%08x", big_endian(d, 0));
      return std::string(b);
    }() + ", expected 0x" + [&] {
      char b[16];
      std::snprintf(b, sizeof b, "%08x", magic);
      return std::string(b);
    }());
  std::size_t header = 4 + 4 * static_cast<std::size_t>(rank);
  if (d.size() < header) fail(ErrorCode::data_loss, "mnist", "'" + path + "' is truncated inside its header");
  std::vector<std::int64_t> dims;
  std::uint64_t count = 1;
  bool saturated = false;  // dims of up to 2^32 each: the product may not fit 64 bits
  for (int i = 0; i < rank; ++i) {
    dims.push_back(big_endian(d, 4 + 4 * static_cast<std::size_t>(i)));
    auto dim = static_cast<std::uint64_t>(dims.back());
    if (dim != 0 && count > (std::uint64_t{1} << 40) / dim) saturated = true;
    else count *= dim;
  }
  for (auto dim : dims) if (dim == 0) saturated = false, count = 0;
  if (saturated || d.size() - header != count)
    fail(ErrorCode::data_loss, "mnist",
         "'" + path + "' holds " + std::to_string(d.size() - header) + " bytes of data where its header promises " +
             (saturated ? std::string("more than 2^40") : std::to_string(count)) +
             (saturated || d.size() - header < count ? " (truncated)" : ""));
  return dims;
}

}  // namespace

Digits load_idx(const std::string& images_path, const std::string& labels_path) {
  return parse_idx(read_all(images_path), read_all(labels_path), images_path, labels_path);
}

Digits parse_idx(const std::vector<unsigned char>& img, const std::vector<unsigned char>& lab,
                 const std::string& images_path, const std::string& labels_path) {
  std::vector<std::int64_t> idims = idx_dims(img, images_path, 0x00000803, 3);
  std::vector<std::int64_t> ldims = idx_dims(lab, labels_path, 0x00000801, 1);
  if (idims[0] != ldims[0])
    fail("mnist", "'" + images_path + "' has " + std::to_string(idims[0]) + " images but '" + labels_path + "' has " +
                      std::to_string(ldims[0]) + " labels");
  Digits out{Tensor::empty(DType::float32, Shape{idims[0], idims[1], idims[2]}), Tensor::empty(DType::int64, Shape{ldims[0]})};
  auto pixels = out.images.mutable_data<float>();
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(img[16 + i]) / 255.0f;
  auto labels = out.labels.mutable_data<std::int64_t>();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    labels[i] = lab[8 + i];
    if (labels[i] > 9) fail("mnist", "'" + labels_path + "' has label " + std::to_string(labels[i]) + " at " + std::to_string(i));
  }
  return out;
}

Digits load_mnist_test(const std::string& dir) {
  return load_idx(dir + "/t10k-images-idx3-ubyte.gz", dir + "/t10k-labels-idx1-ubyte.gz");
}

std::optional<std::string> find_mnist(const std::string& flag) {
  namespace fs = std::filesystem;
  auto holds = [](const fs::path& d) { return fs::exists(d / "t10k-images-idx3-ubyte.gz") && fs::exists(d / "t10k-labels-idx1-ubyte.gz"); };
  if (!flag.empty()) return holds(flag) ? std::optional<std::string>(flag) : std::nullopt;
  if (const char* env = std::getenv("EF_MNIST_DIR")) return holds(env) ? std::optional<std::string>(env) : std::nullopt;
  std::error_code ec;
  for (fs::path p = fs::current_path(ec); !p.empty(); p = p.parent_path()) {
    if (holds(p / "../shared/data/mnist")) return (p / "../shared/data/mnist").lexically_normal().string();
    if (holds(p / "shared/data/mnist")) return (p / "shared/data/mnist").lexically_normal().string();
    if (p == p.parent_path()) break;
  }
  return std::nullopt;
}

Digits synthetic_digits(std::int64_t n, std::uint64_t seed) {
  if (n < 0) fail("synthetic_digits", "n must be >= 0");
  // Ten fixed random "prototypes"; each example is its class's prototype plus noise.
  // Stateless draws: the same seed gives the same digits on every call.
  Tensor prototypes = random::stateless_uniform({10, 28, 28}, seed + 1, 0.0, 1.0);
  Tensor labels = cast(random::stateless_uniform({n}, seed + 2, 0.0, 10.0), DType::int64);
  Tensor images = gather(prototypes, labels, 0) * 0.7f + random::stateless_uniform({n, 28, 28}, seed + 3, 0.0, 0.3);
  return {images, labels};
}

}  // namespace ef::data
