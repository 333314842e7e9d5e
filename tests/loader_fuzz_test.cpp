// Every loader fed damaged files: truncated, bit-flipped, overwritten, spliced and random
// bytes. Each must load or throw ef::Error: no crash, no hang (bounded time), no other
// exception, and no allocation larger than the file justifies. Fixed seed unless EF_FUZZ_SEED
// is set; EF_FUZZ_ITERATIONS and EF_FUZZ_SECONDS bound the work.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include "test_util.h"

using namespace ef;

namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

using Bytes = std::vector<std::byte>;

// One damaged variant of `seed_file`.
Bytes mutate(const Bytes& seed_file, std::mt19937_64& gen) {
  Bytes b = seed_file;
  auto pick = [&](std::size_t n) { return n ? static_cast<std::size_t>(gen() % n) : 0; };
  switch (gen() % 6) {
    case 0:  // truncated
      b.resize(pick(b.size() + 1));
      break;
    case 1:  // a few bits flipped
      for (int i = 0, n = 1 + static_cast<int>(gen() % 8); i < n && !b.empty(); ++i)
        b[pick(b.size())] ^= static_cast<std::byte>(1u << (gen() % 8));
      break;
    case 2:  // a run overwritten with random bytes (header length, JSON, data)
      if (!b.empty())
        for (std::size_t i = pick(b.size()), n = 1 + pick(16); i < b.size() && n; ++i, --n) b[i] = static_cast<std::byte>(gen());
      break;
    case 3: {  // a digit of the header changed: sizes, offsets and dims become others
      for (int tries = 0; tries < 64 && !b.empty(); ++tries) {
        std::size_t i = pick(b.size());
        char c = static_cast<char>(b[i]);
        if (c >= '0' && c <= '9') {
          b[i] = static_cast<std::byte>('0' + gen() % 10);
          if (gen() % 2) b.insert(b.begin() + static_cast<long>(i), static_cast<std::byte>('0' + gen() % 10));
          break;
        }
      }
      break;
    }
    case 4: {  // a slice duplicated or removed
      if (b.size() > 2) {
        std::size_t a = pick(b.size()), n = pick(b.size() - a);
        if (gen() % 2) b.insert(b.begin() + static_cast<long>(a), b.begin() + static_cast<long>(a), b.begin() + static_cast<long>(a + n));
        else b.erase(b.begin() + static_cast<long>(a), b.begin() + static_cast<long>(a + n));
      }
      break;
    }
    default:  // random bytes
      b.resize(pick(256));
      for (auto& x : b) x = static_cast<std::byte>(gen());
  }
  return b;
}

// Runs `load(bytes, which seed)` over mutations of the seed files. `justified(bytes)`: the most any single
// allocation may take for that input.
void fuzz(const std::vector<Bytes>& seeds, const std::function<void(const Bytes&, std::size_t)>& load,
          const std::function<std::size_t(const Bytes&)>& justified) {
  std::uint64_t seed = env_or("EF_FUZZ_SEED", 20261130);
  std::uint64_t iterations = env_or("EF_FUZZ_ITERATIONS", 10000);
  double seconds = static_cast<double>(env_or("EF_FUZZ_SECONDS", 120));
  std::mt19937_64 gen(seed);
  auto start = std::chrono::steady_clock::now();
  std::uint64_t loaded = 0, rejected = 0, done = 0;
  for (; done < iterations; ++done) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) break;
    Bytes b = mutate(seeds[done % seeds.size()], gen);
    allocator::reset_largest_request();
    try {
      load(b, done % seeds.size());
      ++loaded;
    } catch (const Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      FAIL() << "iteration " << done << " (EF_FUZZ_SEED=" << seed << "): not an ef::Error: " << e.what();
    }
    ASSERT_LE(allocator::largest_request(), justified(b)) << "iteration " << done << ": allocation larger than the file justifies";
  }
  EXPECT_GT(rejected, done / 4) << "the mutations should mostly break the files";
  EXPECT_GE(done, std::min<std::uint64_t>(iterations, 1000)) << "too few iterations ran in time";
  std::printf("fuzz: %llu inputs, %llu loaded, %llu rejected (seed %llu)\n", static_cast<unsigned long long>(done),
              static_cast<unsigned long long>(loaded), static_cast<unsigned long long>(rejected),
              static_cast<unsigned long long>(seed));
}

}  // namespace

TEST(LoaderFuzz, SafetensorsFilesAndCheckpoints) {
  std::vector<Bytes> seeds = {
      io::serialize_safetensors({{"w", reshape(arange(0.0, 12.0, 1.0), {4, 3}) * 0.37f}, {"b", zeros({3})}, {"step", scalar(std::int64_t{3})}},
                                {{"format", "eagerflow-checkpoint"}}),
      io::serialize_safetensors({{"mask", tensor(std::vector<bool>{true, false})}, {"d", tensor(std::vector<double>{1, 2})},
                                 {"empty", zeros({0, 2})}, {"i", tensor(std::vector<std::int32_t>{1})}}),
      io::serialize_safetensors({}),
  };
  // A tensor may take at most the file's bytes; the header's parse a small multiple of them.
  fuzz(seeds, [](const Bytes& b, std::size_t) { io::parse_safetensors(b, "fuzzed"); },
       [](const Bytes& b) { return b.size() + 64; });
}

TEST(LoaderFuzz, MnistIdxFiles) {
  auto idx = [](std::uint32_t magic, std::vector<std::uint32_t> dims, std::size_t data) {
    Bytes b;
    auto put = [&](std::uint32_t v) {
      for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::byte>((v >> s) & 0xff));
    };
    put(magic);
    for (auto d : dims) put(d);
    for (std::size_t i = 0; i < data; ++i) b.push_back(static_cast<std::byte>(i % 10));
    return b;
  };
  Bytes images = idx(0x803, {3, 28, 28}, 3 * 784), labels = idx(0x801, {3}, 3);
  std::vector<Bytes> seeds = {images, labels};
  auto as_uchar = [](const Bytes& b) {
    std::vector<unsigned char> v(b.size());
    if (!b.empty()) std::memcpy(v.data(), b.data(), b.size());
    return v;
  };
  auto good_images = as_uchar(images), good_labels = as_uchar(labels);
  // Damage the images (with good labels) or the labels (with good images); pixels become
  // float32 and labels int64: 4 or 8 bytes per byte of the file.
  fuzz(seeds,
       [&](const Bytes& b, std::size_t which) {
         if (which == 0) data::parse_idx(as_uchar(b), good_labels, "images", "labels");
         else data::parse_idx(good_images, as_uchar(b), "images", "labels");
       },
       [&](const Bytes& b) { return 8 * (b.size() + images.size()) + 64; });
}

// The MNIST reader through its files: gzip damage (truncated streams, bad CRCs, corrupt
// deflate blocks) on top of IDX damage.
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

TEST(LoaderFuzz, MnistGzipFiles) {
  namespace fs = std::filesystem;
  fs::path dir = ef::testing::fresh_temp_dir("fuzz_gz");
  auto gz = [&](const fs::path& p, const std::vector<unsigned char>& raw) {
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, raw.data(), static_cast<unsigned>(raw.size()));
    gzclose(f);
    std::ifstream in(p, std::ios::binary);
    std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Bytes b(c.size());
    std::memcpy(b.data(), c.data(), c.size());
    return b;
  };
  std::vector<unsigned char> images = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 28, 0, 0, 0, 28};
  for (int i = 0; i < 2 * 784; ++i) images.push_back(static_cast<unsigned char>(i * 7));
  std::vector<unsigned char> labels = {0, 0, 8, 1, 0, 0, 0, 2, 3, 9};
  Bytes gz_images = gz(dir / "seed-images.gz", images);
  gz(dir / "labels.gz", labels);
  data::load_idx((dir / "seed-images.gz").string(), (dir / "labels.gz").string());  // the seed itself loads
  fuzz({gz_images},
       [&](const Bytes& b, std::size_t) {
         std::ofstream out(dir / "images.gz", std::ios::binary | std::ios::trunc);
         out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
         out.close();
         data::load_idx((dir / "images.gz").string(), (dir / "labels.gz").string());
       },
       // A gzip member can expand 1000-fold; the reader caps what it accepts at 256 MiB.
       [&](const Bytes& b) { return std::max<std::size_t>(8 * 1032 * (b.size() + 64), std::size_t{1} << 20); });
  fs::remove_all(dir);
}
