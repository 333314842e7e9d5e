// TF's tensor-bundle checkpoint files: round trips of every dtype, empty tensors, indexes of many
// blocks, the object graph message, and damaged or hostile files (each a clean ef::Error).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <random>

#include "eagerflow/core/error.h"
#include "eagerflow/core/string_tensor.h"
#include "eagerflow/io/tensor_bundle.h"
#include "eagerflow/io/trackable_object_graph.h"
#include "eagerflow/io/tf_checkpoint.h"
#include "eagerflow/summary/event_file.h"
#include "io/proto_wire.h"
#include "io/sstable.h"

using namespace ef;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("ef_bundle_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A tensor of `dtype` and `shape` whose bytes are a pattern (bool: 0/1).
Tensor patterned(DType dtype, const Shape& shape, unsigned seed) {
  if (dtype == DType::string) {
    std::vector<std::string> v;
    for (std::int64_t i = 0; i < shape.num_elements(); ++i)
      v.push_back(std::string(static_cast<std::size_t>((i * 7 + seed) % 300), static_cast<char>('a' + i % 26)));
    return string_tensor(v, shape);
  }
  Tensor t = Tensor::empty(dtype, shape);
  auto* p = static_cast<unsigned char*>(t.raw_mutable_data());
  for (std::size_t i = 0; i < t.nbytes(); ++i)
    p[i] = dtype == DType::bool_ ? static_cast<unsigned char>((i + seed) % 2)
                                 : static_cast<unsigned char>(i * 31 + seed);
  return t;
}

void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  if (a.dtype() == DType::string) {
    EXPECT_EQ(string_values(a), string_values(b));
  } else {
    ASSERT_EQ(a.nbytes(), b.nbytes());
    if (a.nbytes() > 0) {  // an empty tensor may have no storage (memcmp on null is undefined)
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0);
    }
  }
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

ErrorCode code_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::unknown;
}

}  // namespace

TEST(TensorBundle, RoundTripsEveryDtypeAndEmptyTensors) {
  auto dir = fresh_dir("dtypes");
  std::string prefix = (dir / "ckpt-1").string();
  std::vector<std::pair<std::string, Tensor>> added;
  unsigned seed = 1;
  for (DType d : all_dtypes) {
    for (const Shape& s : {Shape{}, Shape{3, 5}, Shape{0, 4}, Shape{2, 1, 3}}) {
      added.emplace_back(
          std::string(name_of(d)) + "/" + std::to_string(s.num_elements()) + "/" + std::to_string(s.rank()),
          patterned(d, s, seed++));
    }
  }
  {
    io::BundleWriter w(prefix);
    for (auto& [k, t] : added) w.add(k, t);
    EXPECT_FALSE(fs::exists(io::bundle_index_path(prefix)));  // nothing visible before finish
    w.finish();
  }
  ASSERT_TRUE(io::is_tensor_bundle(prefix));
  io::BundleReader r(prefix);
  EXPECT_EQ(r.keys().size(), added.size());
  for (auto& [k, t] : added) {
    SCOPED_TRACE(k);
    EXPECT_EQ(r.dtype(k), t.dtype());
    EXPECT_EQ(r.shape(k), t.shape());
    expect_same(r.read(k), t);
  }
  // no temporary files left beside the checkpoint
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 2);
}

TEST(TensorBundle, ManyKeysAcrossSeveralIndexBlocks) {
  auto dir = fresh_dir("many");
  std::string prefix = (dir / "ckpt").string();
  io::BundleWriter::Options options;
  options.index_block_size = 512;  // several blocks, several restart points per block
  {
    io::BundleWriter w(prefix, options);
    for (int i = 0; i < 600; ++i)
      w.add("model/layer_" + std::to_string(i) + "/kernel/.ATTRIBUTES/VARIABLE_VALUE",
            ef::tensor<float>({static_cast<float>(i), 1.5f}, Shape{2}));
    w.finish();
  }
  auto index = slurp(io::bundle_index_path(prefix));
  EXPECT_GT(index.size(), 512u * 20);
  io::BundleReader r(prefix);
  auto keys = r.keys();
  ASSERT_EQ(keys.size(), 600u);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  for (int i : {0, 1, 255, 599}) {
    auto t = r.read("model/layer_" + std::to_string(i) + "/kernel/.ATTRIBUTES/VARIABLE_VALUE");
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{static_cast<float>(i), 1.5f}));
  }
}

TEST(TensorBundle, SSTableBlocksAreLevelDBs) {
  // Known bytes of LevelDB's layout: an empty block is one restart (0) and the count 1, and a
  // table's footer ends with the magic number 0xdb4775248b80fb57.
  auto table = io::sstable::build({{"a", "1"}, {"ab", "2"}});
  ASSERT_GE(table.size(), 48u);
  EXPECT_EQ(io::wire::get_fixed64(table.data() + table.size() - 8), 0xdb4775248b80fb57ull);
  // the first entry: shared 0, non-shared 1, value 1, "a", "1"; the second shares "a"
  EXPECT_EQ(table.substr(0, 10), std::string("\x00\x01\x01"
                                             "a1"
                                             "\x01\x01\x01"
                                             "b2",
                                             10));
  auto entries = io::sstable::read(table, "t");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].first, "ab");
  EXPECT_EQ(entries[1].second, "2");
}

TEST(TensorBundle, ObjectGraphRoundTrip) {
  io::TrackableObjectGraph g(3);
  g[0].children = {{1, "model"}, {2, "optimizer"}};
  g[0].has_checkpoint_values = true;
  g[1].attributes = {{"VARIABLE_VALUE", "dense/kernel", "model/.ATTRIBUTES/VARIABLE_VALUE"}};
  g[2].slot_variables = {{1, "m", 2}};
  auto back = io::parse_object_graph(io::serialize_object_graph(g), "g");
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].children[1].local_name, "optimizer");
  EXPECT_EQ(back[0].children[1].node_id, 2);
  EXPECT_TRUE(back[0].has_checkpoint_values);
  EXPECT_EQ(back[1].attributes[0].checkpoint_key, "model/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(back[2].slot_variables[0].slot_name, "m");
  // a child that points outside the graph
  g[0].children.push_back({7, "x"});
  EXPECT_EQ(code_of([&] { io::parse_object_graph(io::serialize_object_graph(g), "g"); }), ErrorCode::data_loss);
}

TEST(TensorBundle, ErrorsNameTheFile) {
  auto dir = fresh_dir("errors");
  std::string prefix = (dir / "ck").string();
  try {
    io::BundleReader r(prefix);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found);
    EXPECT_NE(std::string(e.what()).find(prefix), std::string::npos);
  }
  {
    io::BundleWriter w(prefix);
    w.add("x", ef::tensor<float>({1, 2, 3}, Shape{3}));
    EXPECT_EQ(code_of([&] { w.add("x", ef::tensor<float>({1}, Shape{1})); }), ErrorCode::already_exists);
    EXPECT_EQ(code_of([&] { w.add("", ef::tensor<float>({1}, Shape{1})); }), ErrorCode::invalid_argument);
    w.finish();
  }
  io::BundleReader r(prefix);
  EXPECT_EQ(code_of([&] { r.read("y"); }), ErrorCode::not_found);
  // a flipped data byte: the entry's CRC
  auto data = slurp(io::bundle_data_path(prefix));
  data[5] ^= 1;
  spit(io::bundle_data_path(prefix), data);
  try {
    r.read("x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::data_loss);
    EXPECT_NE(std::string(e.what()).find("ck.index"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("CRC"), std::string::npos);
  }
  // a truncated index
  auto index = slurp(io::bundle_index_path(prefix));
  spit(io::bundle_index_path(prefix), index.substr(0, index.size() - 3));
  EXPECT_EQ(code_of([&] { io::BundleReader bad(prefix); }), ErrorCode::data_loss);
  // an unfinished writer leaves nothing behind
  {
    io::BundleWriter w((dir / "never").string());
    w.add("x", ef::tensor<float>({1}, Shape{1}));
  }
  for (auto& e : fs::directory_iterator(dir)) EXPECT_EQ(e.path().string().find("never"), std::string::npos) << e.path();
}

TEST(TensorBundle, HostileEntries) {
  // Well-formed tables (valid CRCs) holding hostile entries: the checks behind the CRCs.
  auto dir = fresh_dir("hostile");
  std::string prefix = (dir / "h").string();
  spit(io::bundle_data_path(prefix), std::string(64, '\0'));
  std::string header;
  io::wire::put_varint_field(header, 1, 1);
  auto entry = [](int dtype, std::vector<std::int64_t> dims, std::uint64_t offset, std::uint64_t size) {
    std::string e, shape;
    io::wire::put_varint_field(e, 1, static_cast<std::uint64_t>(dtype));
    for (auto d : dims) {
      std::string dim;
      io::wire::put_varint_field(dim, 1, static_cast<std::uint64_t>(d));
      io::wire::put_bytes_field(shape, 2, dim);
    }
    io::wire::put_bytes_field(e, 2, shape);
    io::wire::put_varint_field(e, 4, offset);
    io::wire::put_varint_field(e, 5, size);
    return e;
  };
  struct Case {
    std::string name, value;
    ErrorCode code;
  };
  std::vector<Case> cases = {
      {"huge dims", entry(1, {1ll << 40, 1ll << 40}, 0, 16), ErrorCode::data_loss},
      {"size past the file", entry(1, {4}, 0, 1ull << 50), ErrorCode::data_loss},
      {"offset past the file", entry(1, {4}, 1ull << 62, 16), ErrorCode::data_loss},
      {"size not the shape's", entry(1, {5}, 0, 16), ErrorCode::data_loss},
      {"unknown dtype", entry(99, {4}, 0, 16), ErrorCode::unimplemented},
      {"too many strings", entry(7, {1000}, 0, 64), ErrorCode::data_loss},
      {"bad varint", std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12), ErrorCode::data_loss},
      {"negative dim", entry(1, {-3}, 0, 0), ErrorCode::data_loss},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    spit(io::bundle_index_path(prefix), io::sstable::build({{"", header}, {"k", c.value}}));
    EXPECT_EQ(code_of([&] {
                io::BundleReader r(prefix);
                r.read("k");
              }),
              c.code);
  }
  // strings whose lengths claim more bytes than the entry has (CRC set right for the lengths)
  std::string data;
  io::wire::put_varint(data, 1ull << 40);
  std::string le;  // lengths past 32 bits count as 8 bytes in the lengths' CRC
  io::wire::put_fixed64(le, 1ull << 40);
  io::wire::put_fixed32(data, summary::mask_crc(summary::crc32c(le)));
  data += "abcd";
  spit(io::bundle_data_path(prefix), data);
  spit(io::bundle_index_path(prefix), io::sstable::build({{"", header}, {"k", entry(7, {1}, 0, data.size())}}));
  EXPECT_EQ(code_of([&] { io::BundleReader(prefix).read("k"); }), ErrorCode::data_loss);
  // keys out of order, and a block handle pointing outside the file
  EXPECT_EQ(code_of([] {
              std::string t = io::sstable::build({{"b", ""}, {"c", ""}});
              t[3] = 'z';  // "b" -> "z": the CRC no longer matches either
              io::sstable::read(t, "t");
            }),
            ErrorCode::data_loss);
}

TEST(TensorBundle, FuzzedIndexAndDataFilesGiveCleanErrors) {
  auto dir = fresh_dir("fuzz");
  std::string prefix = (dir / "f").string();
  io::BundleWriter::Options options;
  options.index_block_size = 128;
  {
    io::BundleWriter w(prefix, options);
    w.add("a/.ATTRIBUTES/VARIABLE_VALUE", ef::tensor<float>({1, 2, 3, 4}, Shape{2, 2}));
    w.add("b/strings", string_tensor({"hello", "", "world"}, Shape{3}));
    w.add("c/int64", ef::tensor<std::int64_t>({7}, Shape{}));
    for (int i = 0; i < 12; ++i) w.add("d/" + std::to_string(i), ef::tensor<std::int32_t>({i, i}, Shape{2}));
    w.finish();
  }
  const std::string index = slurp(io::bundle_index_path(prefix));
  const std::string data = slurp(io::bundle_data_path(prefix));
  const auto entries = io::sstable::read(index, "seed");
  std::mt19937_64 gen(20261205);
  auto mutate = [&](std::string b) {
    auto pick = [&](std::size_t n) { return n ? static_cast<std::size_t>(gen() % n) : 0; };
    switch (gen() % 4) {
      case 0: b.resize(pick(b.size() + 1)); break;
      case 1:
        for (int i = 0, n = 1 + static_cast<int>(gen() % 4); i < n && !b.empty(); ++i)
          b[pick(b.size())] ^= static_cast<char>(1u << (gen() % 8));
        break;
      case 2:
        for (std::size_t i = pick(b.size()), n = 1 + pick(8); i < b.size() && n; ++i, --n)
          b[i] = static_cast<char>(gen());
        break;
      default: b.insert(pick(b.size() + 1), std::string(1 + pick(4), static_cast<char>(gen()))); break;
    }
    return b;
  };
  const int iterations = std::getenv("EF_SANITIZED") ? 600 : 2000;
  int errors = 0, loaded = 0;
  for (int it = 0; it < iterations; ++it) {
    std::string new_index = index, new_data = data;
    switch (it % 3) {
      case 0: new_index = mutate(index); break;  // raw bytes: mostly caught by the block CRCs
      case 1: new_data = mutate(data); break;    // the entries' CRCs and string lengths
      default: {                                 // entries changed behind valid block CRCs
        auto e = entries;
        auto& victim = e[gen() % e.size()];
        victim.second = mutate(victim.second);
        new_index = io::sstable::build(e, 128);
      }
    }
    spit(io::bundle_index_path(prefix), new_index);
    spit(io::bundle_data_path(prefix), new_data);
    try {
      io::BundleReader r(prefix);
      for (const auto& k : r.keys()) r.read(k);
      ++loaded;
    } catch (const Error& e) {
      ++errors;
      ASSERT_NE(std::string(e.what()).find(prefix), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(errors, iterations / 2);
  EXPECT_GT(loaded, 0);  // some mutations (a changed tensor value... in unused padding) still load
}

TEST(TensorBundle, KilledWriterLeavesTheOldCheckpoint) {
  auto dir = fresh_dir("killed");
  std::string prefix = (dir / "ck").string();
  {
    io::BundleWriter w(prefix);
    w.add("v", ef::tensor<float>({1, 2}, Shape{2}));
    w.finish();
  }
  Tensor replacement = ef::tensor<float>({3, 4}, Shape{2});
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // a writer of the same prefix, killed before it finishes
    io::BundleWriter w(prefix);
    w.add("v", replacement);
    w.add("w", replacement);
    ::_exit(9);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 9);
  int temporaries = 0;
  for (auto& e : fs::directory_iterator(dir))
    temporaries += e.path().filename().string().find(".ef-tmp") != std::string::npos;
  EXPECT_EQ(temporaries, 1);  // its data, never renamed
  io::BundleReader r(prefix);
  EXPECT_EQ(r.keys(), std::vector<std::string>{"v"});
  EXPECT_EQ(r.read("v").to_vector<float>(), (std::vector<float>{1, 2}));
  {
    io::BundleWriter w(prefix);  // the next writer removes what the dead one left
    w.add("v", replacement);
    w.finish();
  }
  for (auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".ef-tmp"), std::string::npos);
  EXPECT_EQ(io::BundleReader(prefix).read("v").to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST(TfCheckpoint, LatestListAndLoadAsTensorFlow) {
  auto dir = fresh_dir("tfck");
  for (int i = 1; i <= 2; ++i) {
    io::BundleWriter w((dir / ("ckpt-" + std::to_string(i))).string());
    w.add("model/w/.ATTRIBUTES/VARIABLE_VALUE", ef::tensor<float>({static_cast<float>(i), 0.5f}, Shape{2}));
    w.add("save_counter/.ATTRIBUTES/VARIABLE_VALUE", ef::tensor<std::int64_t>({i}, Shape{}));
    w.finish();
  }
  EXPECT_FALSE(train::latest_checkpoint(dir.string()).has_value());  // no state file yet
  spit(dir / "checkpoint",
       "model_checkpoint_path: \"ckpt-2\"\nall_model_checkpoint_paths: \"ckpt-1\"\n"
       "all_model_checkpoint_paths: \"ckpt-2\"\n");
  auto latest = train::latest_checkpoint(dir.string());
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(*latest, (dir / "ckpt-2").string());
  auto listed = train::list_variables(dir.string());
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].first, "model/w/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(listed[0].second, (Shape{2}));
  EXPECT_EQ(listed[1].second, Shape{});
  EXPECT_EQ(train::load_variable(dir.string(), "model/w/.ATTRIBUTES/VARIABLE_VALUE:0").to_vector<float>(),
            (std::vector<float>{2, 0.5f}));
  EXPECT_EQ(
      train::load_variable((dir / "ckpt-1").string(), "save_counter/.ATTRIBUTES/VARIABLE_VALUE").item<std::int64_t>(),
      1);
  // a state file naming a checkpoint that is gone, and a folder without any
  spit(dir / "checkpoint", "model_checkpoint_path: \"ckpt-9\"\n");
  EXPECT_FALSE(train::latest_checkpoint(dir.string()).has_value());
  EXPECT_EQ(code_of([&] { train::list_variables(dir.string()); }), ErrorCode::invalid_argument);
  spit(dir / "checkpoint", "model_checkpoint_path: ckpt-2\n");
  EXPECT_EQ(code_of([&] { train::latest_checkpoint(dir.string()); }), ErrorCode::data_loss);
}
