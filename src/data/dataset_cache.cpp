// cache(): in memory, or in a file written atomically at the end of the first complete pass.
//
// The file: "EFDSCACHE1\n", the element spec's text and "\n", then per element and per
// component: rank (u8), dims (i64 each), the raw bytes. The spec line must match the dataset's
// (else an ef::Error: the file belongs to another pipeline); a truncated or damaged file is an
// ef::Error naming it.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "data/dataset_internal.h"
#include "eagerflow/io/safetensors.h"

namespace ef::data {
using detail::fail_data;
using detail::Flat;

namespace {

constexpr char kMagic[] = "EFDSCACHE1\n";

struct CacheState {
  std::mutex mu;
  std::shared_ptr<const std::vector<Flat>> elements;  // set by the first complete pass
};

void append(std::vector<std::byte>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n);
}

void write_cache(const std::string& path, const ElementSpec& spec, const std::vector<Flat>& elements) {
  std::vector<std::byte> bytes;
  append(bytes, kMagic, sizeof(kMagic) - 1);
  std::string line = spec.str() + "\n";
  append(bytes, line.data(), line.size());
  for (const auto& e : elements)
    for (const auto& t : e) {
      if (t.dtype() == DType::string)
        fail(ErrorCode::unimplemented, "Dataset::cache", "a file cache of string elements is not supported yet; cache() in memory");
      auto rank = static_cast<std::uint8_t>(t.rank());
      append(bytes, &rank, 1);
      for (auto d : t.shape().dims()) append(bytes, &d, sizeof d);
      if (t.nbytes()) append(bytes, t.raw_data(), t.nbytes());
    }
  io::write_file_atomically(path, bytes);
}

struct CacheReader final : detail::IteratorImpl {
  std::string path;
  ElementSpec spec;
  std::vector<std::byte> bytes;
  std::size_t pos = 0;
  std::int64_t index = 0;
  CacheReader(std::string p, ElementSpec s) : path(std::move(p)), spec(std::move(s)) {
    bytes = io::read_file(path);
    std::string head = std::string(kMagic) + spec.str() + "\n";
    if (bytes.size() < head.size() || std::memcmp(bytes.data(), head.data(), head.size()) != 0) {
      if (bytes.size() >= sizeof(kMagic) - 1 && std::memcmp(bytes.data(), kMagic, sizeof(kMagic) - 1) == 0)
        fail_data("cache: the file " + path + " holds elements of another spec than " + spec.str() +
                  " (a cache of another pipeline; delete it)");
      fail_data(ErrorCode::data_loss, "cache: " + path + " is not a dataset cache file");
    }
    pos = head.size();
  }
  void take(void* dst, std::size_t n) {
    if (bytes.size() - pos < n)
      fail_data(ErrorCode::data_loss, "cache: " + path + " is truncated (element " + std::to_string(index) + ")");
    if (n) std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
  }
  bool next(Flat& out) override {
    if (pos == bytes.size()) return false;
    out.clear();
    for (const auto& c : spec.specs) {
      std::uint8_t rank = 0;
      take(&rank, 1);
      if (rank != c.shape.rank())
        fail_data(ErrorCode::data_loss, "cache: " + path + " is damaged (element " + std::to_string(index) + ")");
      std::vector<std::int64_t> dims(rank);
      for (auto& d : dims) {
        take(&d, sizeof d);
        if (d < 0 || d > (std::int64_t{1} << 40))
          fail_data(ErrorCode::data_loss, "cache: " + path + " is damaged (element " + std::to_string(index) + ")");
      }
      Shape shape(dims);
      // Checked before allocating: a damaged size is an error, not a huge allocation.
      std::uint64_t n = size_of(c.dtype);
      for (auto d : dims)
        if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n)) n = UINT64_MAX;
      if (n > bytes.size() - pos)
        fail_data(ErrorCode::data_loss, "cache: " + path + " is truncated (element " + std::to_string(index) + ")");
      Tensor t = Tensor::empty(c.dtype, shape);
      take(t.raw_mutable_data(), t.nbytes());
      out.push_back(std::move(t));
    }
    detail::check_element(spec, out, "cache (" + path + ")", index);
    ++index;
    return true;
  }
};

struct CacheNode final : detail::Node {
  std::shared_ptr<const detail::Node> input;
  std::string filename;
  std::shared_ptr<CacheState> state = std::make_shared<CacheState>();
  CacheNode(std::shared_ptr<const detail::Node> in, std::string f) : Node(in->spec), input(std::move(in)), filename(std::move(f)) {}
  std::int64_t cardinality() const override { return input->cardinality(); }
  std::unique_ptr<detail::IteratorImpl> iterate() const override {
    std::shared_ptr<const std::vector<Flat>> done;
    {
      std::lock_guard lk(state->mu);
      done = state->elements;
    }
    if (done) {
      struct Replay final : detail::IteratorImpl {
        std::shared_ptr<const std::vector<Flat>> elements;
        std::size_t i = 0;
        bool next(Flat& out) override {
          if (i >= elements->size()) return false;
          out = (*elements)[i++];
          return true;
        }
      };
      auto r = std::make_unique<Replay>();
      r->elements = std::move(done);
      return r;
    }
    if (!filename.empty() && std::filesystem::exists(filename)) return std::make_unique<CacheReader>(filename, spec);
    struct Fill final : detail::IteratorImpl {
      const CacheNode* node;
      std::unique_ptr<detail::IteratorImpl> in;
      std::shared_ptr<std::vector<Flat>> got = std::make_shared<std::vector<Flat>>();
      bool finished = false;
      bool next(Flat& out) override {
        if (finished) return false;
        if (!in->next(out)) {
          finished = true;
          // A complete pass: keep it (a partial one, ended early, keeps nothing).
          if (!node->filename.empty()) write_cache(node->filename, node->spec, *got);
          else {
            std::lock_guard lk(node->state->mu);
            if (!node->state->elements) node->state->elements = got;
          }
          return false;
        }
        got->push_back(out);
        return true;
      }
    };
    auto f = std::make_unique<Fill>();
    f->node = this;
    f->in = input->iterate();
    return f;
  }
};

}  // namespace

Dataset Dataset::cache(const std::string& filename) const {
  if (!filename.empty() && std::filesystem::is_directory(filename))
    fail_data("cache: " + filename + " is a folder; give a file name");
  return Dataset(std::make_shared<CacheNode>(node_ ? node_ : Dataset::range(0).node(), filename));
}

}  // namespace ef::data
