// The .efmodel checksum as docs/efmodel_format.md gives it: version 2 files carry FNV-1a 64 with
// its standard offset basis (checked here against an implementation of the published
// algorithm), and version 1 files, checksummed from the old mistyped basis, still load.
#include <cstring>
#include <fstream>

#include "test_util.h"

using namespace ef;

namespace {

using Bytes = std::vector<unsigned char>;

// FNV-1a 64 as published (Fowler, Noll, Vo): offset basis 14695981039346656037, prime 2^40 + 2^8 + 0xb3.
std::uint64_t reference_fnv1a64(const unsigned char* p, std::size_t n) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const std::uint64_t prime = (std::uint64_t{1} << 40) + (1u << 8) + 0xb3;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= prime;
  }
  return h;
}

std::uint64_t u64_at(const Bytes& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[at + static_cast<std::size_t>(i)];
  return v;
}
void put_u64(Bytes& b, std::size_t at, std::uint64_t v) {
  for (std::size_t i = 0; i < 8; ++i) b[at + i] = static_cast<unsigned char>((v >> (8 * i)) & 0xff);
}

Bytes read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void write(const std::string& path, const Bytes& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::shared_ptr<train::Sequential> small_model() {
  auto m = std::make_shared<train::Sequential>("small");
  m->add<nn::Dense>(4, "relu", true, "hidden");
  m->add<nn::Dense>(2, nn::ActivationFn{}, true, "out");
  m->predict(ef::testing::randn({2, 3}, 1, DType::float32));  // builds it
  return m;
}

struct Saved {
  std::string dir;
  Bytes bytes;
  std::shared_ptr<train::Sequential> model;
};

Saved save_small(const std::string& name) {
  random::set_seed(5);
  Saved s{ef::testing::fresh_temp_dir(name).string(), {}, small_model()};
  save_model(*s.model, s.dir + "/m.efmodel");
  s.bytes = read(s.dir + "/m.efmodel");
  return s;
}

TEST(EfmodelChecksum, NewFilesCarryTheStandardFnv1a64) {
  Saved s = save_small("efmodel_fnv_new");
  ASSERT_GT(s.bytes.size(), 40u);
  EXPECT_EQ(s.bytes[8], kModelFormatVersion);
  EXPECT_EQ(kModelFormatVersion, 2);
  EXPECT_EQ(u64_at(s.bytes, 32), reference_fnv1a64(s.bytes.data() + 40, s.bytes.size() - 40));
}

TEST(EfmodelChecksum, Version1FilesWithTheOldBasisStillLoad) {
  Saved s = save_small("efmodel_fnv_old");
  // A version 1 file as eagerflow wrote it before: the same layout, the checksum started from
  // 1469598103934665603 (the standard basis with its last digit missing).
  Bytes old = s.bytes;
  old[8] = 1;
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 40; i < old.size(); ++i) h = (h ^ old[i]) * 1099511628211ull;
  put_u64(old, 32, h);
  write(s.dir + "/old.efmodel", old);
  auto loaded = load_model(s.dir + "/old.efmodel");
  Tensor x = ef::testing::randn({5, 3}, 9, DType::float32);
  auto a = s.model->predict(x).to_vector<float>(), b = loaded->predict(x).to_vector<float>();
  EXPECT_EQ(a, b);

  // Each version is read with its own basis only.
  Bytes v1_new_basis = s.bytes;
  v1_new_basis[8] = 1;
  put_u64(v1_new_basis, 32, reference_fnv1a64(v1_new_basis.data() + 40, v1_new_basis.size() - 40));
  write(s.dir + "/mixed1.efmodel", v1_new_basis);
  ef::testing::expect_error([&] { load_model(s.dir + "/mixed1.efmodel"); }, {"checksum"});
  Bytes v2_old_basis = old;
  v2_old_basis[8] = 2;
  write(s.dir + "/mixed2.efmodel", v2_old_basis);
  ef::testing::expect_error([&] { load_model(s.dir + "/mixed2.efmodel"); }, {"checksum"});
}

}  // namespace
