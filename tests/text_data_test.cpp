// Text for language models (eagerflow/data/text.h): gzip and plain files read alike, special
// files and oversized inputs refused, next-byte windows laid out as documented.
#include <sys/stat.h>
#include <zlib.h>

#include <eagerflow/data/text.h>

#include <fstream>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

TEST(TextData, ReadsPlainAndGzipFilesAlike) {
  auto dir = ef::testing::fresh_temp_dir("text_data");
  std::string text = "hello, world\nsecond line\n";
  for (int i = 0; i < 200; ++i) text += "repeat " + std::to_string(i) + "\n";
  std::string plain = (dir / "t.txt").string(), gz = (dir / "t.txt.gz").string();
  std::ofstream(plain, std::ios::binary) << text;
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  EXPECT_EQ(data::read_text(plain), text);
  EXPECT_EQ(data::read_text(gz), text);
  expect_error([&] { data::read_text(gz, 100); }, {"more than 100 bytes"});
  expect_error([&] { data::read_text((dir / "missing").string()); }, {"no such file"});
  expect_error([&] { data::read_text(dir.string()); }, {"not a regular file"});
  std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_error([&] { data::read_text(fifo); }, {"not a regular file"});  // never blocks on the open
  // A damaged gzip stream is an error naming the file.
  std::string bytes = data::read_text(gz);
  std::ifstream in(gz, std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  raw.resize(raw.size() / 2);
  std::string cut = (dir / "cut.gz").string();
  std::ofstream(cut, std::ios::binary) << raw;
  try {
    std::string partial = data::read_text(cut);
    EXPECT_LT(partial.size(), text.size()) << "a truncated stream cannot give the whole text";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut.gz"), std::string::npos) << e.what();
  }
}

TEST(TextData, ByteWindowsAreNextByteTargets) {
  std::string text = "abcdefghij";
  auto w = data::byte_windows(text, 4, 3);  // starts 0, 3 (6 + 4 would need byte 10 as a target)
  ASSERT_EQ(w.x.shape(), (Shape{2, 4}));
  EXPECT_EQ(w.x.dtype(), DType::int32);
  EXPECT_EQ(w.x.to_vector<std::int32_t>(), (std::vector<std::int32_t>{'a', 'b', 'c', 'd', 'd', 'e', 'f', 'g'}));
  EXPECT_EQ(w.y.to_vector<std::int32_t>(), (std::vector<std::int32_t>{'b', 'c', 'd', 'e', 'e', 'f', 'g', 'h'}));
  auto tail = data::byte_windows(text, 2, 2, 5);  // from byte 5: "fghij"
  EXPECT_EQ(tail.x.to_vector<std::int32_t>(), (std::vector<std::int32_t>{'f', 'g', 'h', 'i'}));
  std::string high = "\xff\x80z!";
  EXPECT_EQ(data::byte_windows(high, 2, 1).x.to_vector<std::int32_t>()[0], 255) << "bytes are unsigned";
  expect_error([&] { data::byte_windows(text, 10, 1); }, {"shorter than one window"});
  expect_error([&] { data::byte_windows(text, 0, 1); }, {"context and stride"});
  expect_error([&] { data::byte_windows(text, 2, 1, 8, 4); }, {"begin is past end"});
}
