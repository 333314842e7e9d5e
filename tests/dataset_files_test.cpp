// Dataset sources that read files: text_line, csv (RFC 4180, hostile files), image_folder
// (PNG through libpng, JPEG through libjpeg-turbo; the test writes its images with the same
// libraries).
#include <eagerflow/core/string_tensor.h>
#include <eagerflow/data/dataset.h>
#include <png.h>
#include <cstdio>
#include <jpeglib.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <random>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using ef::Tensor;
using ef::data::CsvOptions;
using ef::data::Dataset;
using ef::data::Element;
using ef::testing::expect_error;

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

std::vector<std::string> lines(const Dataset& ds) {
  std::vector<std::string> out;
  for (const Element& e : ds) out.push_back(ef::data::to_string(e.tensor()));
  return out;
}

TEST(DatasetFiles, TextLinesAcrossFiles) {
  auto dir = ef::testing::fresh_temp_dir("ds_text");
  write(dir / "a.txt", "first\r\nsecond\n\nfourth");
  write(dir / "b.txt", "x\n");
  Dataset ds = Dataset::text_line({(dir / "a.txt").string(), (dir / "b.txt").string()});
  EXPECT_EQ(ds.element_spec().str(), "string[]");
  EXPECT_EQ(lines(ds), (std::vector<std::string>{"first", "second", "", "fourth", "x"}));
  // Lines batch into a vector of strings.
  auto b = ds.batch(5).iterator().next();
  EXPECT_EQ(b->tensor().shape(), ef::Shape({5}));
  EXPECT_EQ(ef::string_values(b->tensor()), (std::vector<std::string>{"first", "second", "", "fourth", "x"}));
  expect_error([&] { Dataset::text_line({(dir / "missing.txt").string()}); }, {"missing.txt", "does not exist"});
  expect_error([&] { Dataset::text_line({dir.string()}); }, {"not a regular file"});
  fs::remove_all(dir);
}

TEST(DatasetFiles, TextLinesLongerThanTheBoundAreErrorsNamingFileAndLine) {
  auto dir = ef::testing::fresh_temp_dir("ds_text_long");
  // Exactly at the bound (with or without "\r\n") reads; one byte over is an error.
  write(dir / "a.txt", "abcd\r\nwxyz\nok\n12345\nnever");
  std::string a = (dir / "a.txt").string();
  ef::data::TextLineOptions four{.max_line_bytes = 4};
  ef::data::Iterator it = Dataset::text_line({a}, four).iterator();
  EXPECT_EQ(ef::data::to_string(it.next()->tensor()), "abcd");
  EXPECT_EQ(ef::data::to_string(it.next()->tensor()), "wxyz");
  EXPECT_EQ(ef::data::to_string(it.next()->tensor()), "ok");
  expect_error([&] { it.next(); }, {"text_line", a, "line 4", "max_line_bytes (4 bytes)"});
  // An unterminated last line, and the default bound (16 MiB) against a longer line.
  write(dir / "b.txt", "x\n" + std::string(5, 'y'));
  expect_error([&] { lines(Dataset::text_line({(dir / "b.txt").string()}, four)); }, {"b.txt", "line 2"});
  EXPECT_EQ(ef::data::TextLineOptions{}.max_line_bytes, std::size_t{1} << 24);
  write(dir / "c.txt", "short\n" + std::string((std::size_t{1} << 24) + 1, 'z') + "\n");
  expect_error([&] { lines(Dataset::text_line({(dir / "c.txt").string()})); }, {"c.txt", "line 2", "16777216 bytes"});
  expect_error([&] { Dataset::text_line({a}, {.max_line_bytes = 0}); }, {"max_line_bytes must be positive"});
  fs::remove_all(dir);
}

TEST(DatasetFiles, CsvTypedColumnsQuotingAndDefaults) {
  auto dir = ef::testing::fresh_temp_dir("ds_csv");
  write(dir / "a.csv", "x,\"label, int\",w\n1.5,\"3\",0.25\r\n\n-2e3,4,\n");
  CsvOptions o;
  o.column_types = {ef::DType::float32, ef::DType::int64, ef::DType::float64};
  o.column_defaults = {std::nullopt, std::nullopt, 9.0};
  Dataset ds = Dataset::csv({(dir / "a.csv").string()}, o);
  EXPECT_EQ(ds.element_spec().str(), "{label, int: int64[], w: float64[], x: float32[]}");
  std::vector<float> xs;
  std::vector<std::int64_t> labels;
  std::vector<double> ws;
  for (const Element& e : ds) {
    xs.push_back(e["x"].item<float>());
    labels.push_back(e["label, int"].item<std::int64_t>());
    ws.push_back(e["w"].item<double>());
  }
  EXPECT_EQ(xs, (std::vector<float>{1.5f, -2000.0f}));
  EXPECT_EQ(labels, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(ws, (std::vector<double>{0.25, 9.0}));
  // No header: a tuple; doubled quotes and a quoted line break are one field (lines counted).
  write(dir / "b.csv", "\"1\",2\n\"3\n\",4\n5,oops\n");
  CsvOptions nh;
  nh.header = false;
  Dataset t = Dataset::csv({(dir / "b.csv").string()}, nh);
  EXPECT_EQ(t.element_spec().str(), "(float32[], float32[])");
  expect_error([&] { for (const Element& e : t) (void)e; }, {"b.csv:2", "not a number"});
  write(dir / "c.csv", "1,2\n3,4\n5,6,7\n");
  expect_error([&] { for (const Element& e : Dataset::csv({(dir / "c.csv").string()}, nh)) (void)e; },
               {"c.csv:3", "has 3 fields, expected 2"});
  write(dir / "d.csv", "1,2\n\"3,4\n5,6\n");
  expect_error([&] { for (const Element& e : Dataset::csv({(dir / "d.csv").string()}, nh)) (void)e; },
               {"d.csv:2", "unterminated quoted field"});
  write(dir / "e.csv", "1,\"2\"x\n");
  expect_error([&] { for (const Element& e : Dataset::csv({(dir / "e.csv").string()}, nh)) (void)e; },
               {"e.csv:1", "after a closing quote"});
  write(dir / "f.csv", "a\n3000000000\n");
  CsvOptions i32;
  i32.column_types = {ef::DType::int32};
  expect_error([&] { for (const Element& e : Dataset::csv({(dir / "f.csv").string()}, i32)) (void)e; },
               {"f.csv:2", "out of range for int32"});
  write(dir / "g.csv", "a,b\n1,\n");
  expect_error([&] { for (const Element& e : Dataset::csv({(dir / "g.csv").string()})) (void)e; }, {"g.csv:2", "'b' is empty"});
  expect_error([&] { Dataset::csv({(dir / "a.csv").string()}, i32); }, {"1 column_types for 3 columns"});
  write(dir / "h.csv", "a,a\n1,2\n");
  expect_error([&] { Dataset::csv({(dir / "h.csv").string()}); }, {"'a' twice"});
  fs::remove_all(dir);
}

TEST(DatasetFiles, HostileCsvFilesFailFastWithoutCrashing) {
  auto dir = ef::testing::fresh_temp_dir("ds_csv_hostile");
  auto start = std::chrono::steady_clock::now();
  // Two million columns on one line; a 4 MB field; an unterminated quote over 1 MB.
  write(dir / "cols.csv", std::string(2'000'000, ','));
  expect_error([&] { Dataset::csv({(dir / "cols.csv").string()}); }, {"cols.csv:1", "max_columns"});
  write(dir / "long.csv", "a\n" + std::string(4'000'000, '7') + "\n");
  CsvOptions small;
  small.max_record_bytes = 1 << 20;
  expect_error([&] { for (const Element& e : Dataset::csv({(dir / "long.csv").string()}, small)) (void)e; },
               {"long.csv:2", "max_record_bytes"});
  write(dir / "quote.csv", "a\n\"" + std::string(1'000'000, 'q'));
  expect_error([&] { for (const Element& e : Dataset::csv({(dir / "quote.csv").string()})) (void)e; },
               {"quote.csv:2", "unterminated"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  // Random bytes: an error or elements, never a crash.
  std::mt19937 rng(7);
  const std::string alphabet = "0123456789.,-\"\n\r e";
  for (int trial = 0; trial < 50; ++trial) {
    std::string s;
    for (int k = 0; k < 200; ++k) s.push_back(alphabet[rng() % alphabet.size()]);
    write(dir / "fuzz.csv", s);
    try {
      CsvOptions o;
      o.header = trial % 2 == 0;
      for (const Element& e : Dataset::csv({(dir / "fuzz.csv").string()}, o)) (void)e;
    } catch (const ef::Error&) {
    }
  }
  fs::remove_all(dir);
}

// A PNG written with libpng's simplified API: 1 (gray) or 3 (RGB) channels.
void write_png(const fs::path& p, int w, int h, int channels, const std::vector<std::uint8_t>& pixels) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(w);
  image.height = static_cast<png_uint_32>(h);
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  ASSERT_TRUE(png_image_write_to_file(&image, p.string().c_str(), 0, pixels.data(), 0, nullptr)) << image.message;
}

void write_jpeg(const fs::path& p, int w, int h, const std::vector<std::uint8_t>& rgb) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  std::FILE* f = std::fopen(p.string().c_str(), "wb");
  ASSERT_NE(f, nullptr);
  jpeg_stdio_dest(&c, f);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 95, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(rgb.data() + static_cast<std::size_t>(c.next_scanline) * static_cast<std::size_t>(w) * 3);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::fclose(f);
}

TEST(DatasetFiles, ImageFolderDecodesPngAndJpegWithLabelsFromFolders) {
  auto dir = ef::testing::fresh_temp_dir("ds_images");
  fs::create_directories(dir / "dog");
  fs::create_directories(dir / "cat");
  std::vector<std::uint8_t> gradient(4 * 4 * 3);
  for (std::size_t i = 0; i < gradient.size(); ++i) gradient[i] = static_cast<std::uint8_t>(i * 5);
  write_png(dir / "cat" / "b.png", 4, 4, 3, gradient);
  std::vector<std::uint8_t> flat(4 * 4 * 3, 200);
  write_jpeg(dir / "cat" / "a.JPG", 4, 4, flat);
  write_png(dir / "dog" / "c.png", 4, 4, 3, gradient);
  write(dir / "dog" / "notes.txt", "not an image");
  EXPECT_EQ(Dataset::image_folder_classes(dir.string()), (std::vector<std::string>{"cat", "dog"}));
  Dataset ds = Dataset::image_folder(dir.string());
  EXPECT_EQ(ds.cardinality(), 3);
  EXPECT_EQ(ds.element_spec().str(), "(float32[?,?,3], int64[])");
  std::vector<Element> all;
  for (const Element& e : ds) all.push_back(e);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0][1].item<std::int64_t>(), 0);  // cat/a.JPG (files sorted by name)
  EXPECT_EQ(all[1][1].item<std::int64_t>(), 0);
  EXPECT_EQ(all[2][1].item<std::int64_t>(), 1);
  EXPECT_EQ(all[0][0].shape(), ef::Shape({4, 4, 3}));
  for (float v : all[0][0].to_vector<float>()) EXPECT_NEAR(v, 200.0f, 3.0f);  // JPEG: lossy
  std::vector<float> want(gradient.begin(), gradient.end());
  EXPECT_EQ(all[1][0].to_vector<float>(), want);  // PNG: exact
  // Resized 2x down (bilinear, half-pixel centers): each output pixel averages a 2x2 block.
  Dataset small = Dataset::image_folder(dir.string(), {.channels = 1, .image_size = std::make_pair<std::int64_t, std::int64_t>(2, 2)});
  EXPECT_EQ(small.element_spec().str(), "(float32[2,2,1], int64[])");
  auto batch = small.batch(3).iterator().next();
  EXPECT_EQ((*batch)[0].shape(), ef::Shape({3, 2, 2, 1}));
  // A damaged image: an error naming it.
  std::string bytes;
  {
    std::ifstream f(dir / "dog" / "c.png", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  write(dir / "dog" / "c.png", bytes.substr(0, bytes.size() / 2));
  expect_error([&] { for (const Element& e : ds) (void)e; }, {"c.png", "PNG"});
  write(dir / "dog" / "c.png", "\x89PNG\r\n\x1a\ngarbage");
  expect_error([&] { for (const Element& e : ds) (void)e; }, {"c.png"});
  write(dir / "cat" / "a.JPG", std::string("\xFF\xD8\xFF\xE0", 4) + std::string(100, 'j'));
  expect_error([&] { for (const Element& e : ds) (void)e; }, {"a.JPG", "JPEG"});
  write(dir / "cat" / "a.JPG", "plain text");
  expect_error([&] { Dataset::image_folder(dir.string()); }, {"a.JPG", "neither a PNG nor a JPEG"});
  expect_error([&] { Dataset::image_folder((dir / "nothing").string()); }, {"not a folder"});
  expect_error([&] { Dataset::image_folder(dir.string(), {.channels = 2}); }, {"channels"});
  fs::remove_all(dir);
}

}  // namespace
