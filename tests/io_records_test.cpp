// TFRecord files (the tfrecord dataset source), Example parsing and TensorProto bytes, against
// bytes TensorFlow 2.21 wrote (hex literals below), and hostile inputs giving errors.
#include <eagerflow/core/string_tensor.h>
#include <eagerflow/data/dataset.h>
#include <eagerflow/io/example.h>
#include <eagerflow/io/tensor_proto.h>
#include <eagerflow/summary/event_file.h>

#include <fstream>

#include "io/op_codec.h"
#include "test_util.h"

namespace {
using namespace ef;
namespace fs = std::filesystem;

std::string unhex(std::string_view h) {
  std::string out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  return out;
}

void write_bytes(const fs::path& p, std::string_view bytes) {
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> records(const fs::path& p, data::RecordCompression c = data::RecordCompression::none) {
  std::vector<std::string> out;
  for (const auto& e : data::Dataset::tfrecord({p.string()}, c)) out.push_back(data::to_string(e.tensor()));
  return out;
}

// tf.train.Example {x: float [1.5, -2], id: int64 [7], name: bytes ["cat"]}, SerializeToString(deterministic=True).
const char* kExampleHex = "0a310a0b0a02696412051a030a01070a0f0a046e616d6512070a050a036361740a110a0178120c120a0a080000c03f000000c0";
// tf.io.TFRecordWriter: b"hello", b"", the Example above.
const char* kRecordsHex =
    "0500000000000000eab2043e68656c6c6fbb1f1c19000000000000000029039807d8ea82a233000000000000000ca720560a310a0b0a0269641205"
    "1a030a01070a0f0a046e616d6512070a050a036361740a110a0178120c120a0a080000c03f000000c0545e1153";
// The same writer with TFRecordOptions('ZLIB') and ('GZIP'): b"hello", b"world".
const char* kZlibHex = "789c63658080579b58ec32527372f277cbcb48b2220996e717e5a4e8fac92f0500bbf10a51";
const char* kGzipHex =
    "1f8b080000000000000363658080579b58ec32527372f277cbcb48b2220996e717e5a4e8fac92f0500f49812152a000000";

TEST(IoRecords, ReadsTensorFlowsRecordFiles) {
  fs::path dir = ef::testing::fresh_temp_dir("io_records_read");
  write_bytes(dir / "tf.rec", unhex(kRecordsHex));
  EXPECT_EQ(records(dir / "tf.rec"), (std::vector<std::string>{"hello", "", unhex(kExampleHex)}));
  write_bytes(dir / "tf.zlib", unhex(kZlibHex));
  EXPECT_EQ(records(dir / "tf.zlib", data::RecordCompression::zlib), (std::vector<std::string>{"hello", "world"}));
  write_bytes(dir / "tf.gz", unhex(kGzipHex));
  EXPECT_EQ(records(dir / "tf.gz", data::RecordCompression::gzip), (std::vector<std::string>{"hello", "world"}));
  // Our framing is TF's bytes.
  std::string ours = summary::frame_record("hello") + summary::frame_record("") + summary::frame_record(unhex(kExampleHex));
  EXPECT_EQ(ours, unhex(kRecordsHex));
}

TEST(IoRecords, DamagedRecordsAreDataLoss) {
  fs::path dir = ef::testing::fresh_temp_dir("io_records_bad");
  const std::string good = unhex(kRecordsHex);
  auto expect_loss = [&](const std::string& bytes, const std::string& what, std::size_t keep) {
    write_bytes(dir / "bad.rec", bytes);
    std::size_t got = 0;
    try {
      for (const auto& e : data::Dataset::tfrecord({(dir / "bad.rec").string()})) {
        (void)e;
        ++got;
      }
      ADD_FAILURE() << "no error for " << what;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::data_loss) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    EXPECT_EQ(got, keep);
  };
  std::string bad_data = good;
  bad_data[14] ^= 1;  // inside "hello"
  expect_loss(bad_data, "corrupted record at 0", 0);
  std::string bad_len_crc = good;
  bad_len_crc[21 + 8] ^= 0x40;  // the second record's length CRC
  expect_loss(bad_len_crc, "corrupted record at 21", 1);
  expect_loss(good.substr(0, good.size() - 2), "truncated record at 37", 2);
  expect_loss(good.substr(0, 30), "truncated record at 21", 1);
  // A length of 2^62 with a valid CRC: refused when the bytes run out, nothing allocated for it.
  std::string huge(8, '\0');
  huge[7] = 0x40;
  std::string header = huge;
  std::uint32_t crc = summary::mask_crc(summary::crc32c(huge));
  for (int i = 0; i < 4; ++i) header.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  expect_loss(header + "abc", "truncated record at 0", 0);
  // A cut gzip stream.
  std::string gz = unhex(kGzipHex);
  write_bytes(dir / "cut.gz", gz.substr(0, gz.size() - 12));
  EXPECT_THROW(records(dir / "cut.gz", data::RecordCompression::gzip), Error);
  write_bytes(dir / "notgz.gz", good);
  EXPECT_THROW(records(dir / "notgz.gz", data::RecordCompression::gzip), Error);
  EXPECT_THROW(data::Dataset::tfrecord({(dir / "missing.rec").string()}), Error);
}

TEST(IoRecords, ParsesExamples) {
  using K = io::ExampleFeature::Kind;
  std::vector<io::ExampleFeature> fs{
      {"id", K::fixed, DType::int64, {}, false, false},
      {"m", K::fixed, DType::int64, {2}, true, false},
      {"name", K::fixed, DType::string, {}, false, false},
      {"x", K::var_len, DType::float32, {}, false, false},
  };
  Tensor ex = string_scalar(unhex(kExampleHex));
  auto out = io::parse_example(ex, fs, {tensor<std::int64_t>({3, 4}, Shape{2})}, false);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0].item<std::int64_t>(), 7);
  EXPECT_EQ(out[1].to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(out[2].item<std::string_view>(), "cat");
  EXPECT_EQ(out[3].to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1}));  // indices [[0], [1]]
  EXPECT_EQ(out[4].to_vector<float>(), (std::vector<float>{1.5f, -2.f}));
  EXPECT_EQ(out[5].to_vector<std::int64_t>(), (std::vector<std::int64_t>{2}));
  // A batch: dense [2, ...], sparse indices [[b, j]].
  Tensor batch = string_tensor({unhex(kExampleHex), unhex(kExampleHex)});
  auto b = io::parse_example(batch, fs, {tensor<std::int64_t>({3, 4}, Shape{2})}, false);
  EXPECT_EQ(b[0].shape(), (Shape{2}));
  EXPECT_EQ(b[3].to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 0, 0, 1, 1, 0, 1, 1}));
  EXPECT_EQ(b[5].to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 2}));
  // Errors as TF's: a missing required key, a wrong type, a wrong count.
  ef::testing::expect_error([&] { io::parse_example(ex, {{"nope", K::fixed, DType::float32, {}, false, false}}, {}, false); },
                     {"Feature: nope (data type: float) is required"});
  ef::testing::expect_error([&] { io::parse_example(ex, {{"id", K::fixed, DType::float32, {}, false, false}}, {}, false); },
                     {"Key: id", "Data types don't match"});
  ef::testing::expect_error([&] { io::parse_example(ex, {{"x", K::fixed, DType::float32, {3}, false, false}}, {}, false); },
                     {"Key: x", "Values size: 2"});
}

TEST(IoRecords, HostileProtosAreErrors) {
  using K = io::ExampleFeature::Kind;
  std::vector<io::ExampleFeature> fs{{"x", K::var_len, DType::float32, {}, false, false}};
  const std::string good = unhex(kExampleHex);
  std::vector<std::string> bad{
      good.substr(0, good.size() - 3),                // truncated
      "\x0a\xff\xff\xff\xff\x0f",                     // a 4 GiB length in 6 bytes
      "\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",  // an 11-byte varint
      "\x0b\x0c",                                     // a group
      "\x0a\x08\x0a\x06\x0a\x01x\x12\x01\x12",        // a Feature whose FloatList overruns it
  };
  for (const auto& s : bad) ef::testing::expect_error([&] { io::parse_example(string_scalar(s), fs, {}, false); }, {"Could not parse"});
  // Deep nesting is not followed: an unknown field's bytes are skipped whole.
  std::string deep(1000, '\x0a');
  ef::testing::expect_error([&] { io::parse_example(string_scalar(deep), fs, {}, false); }, {"Could not parse"});
  std::string unknown = std::string("\x1a\x03" "abc") + good;  // unknown field 3, then the Example
  auto out = io::parse_example(string_scalar(unknown), fs, {}, false);
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{1.5f, -2.f}));
}

TEST(IoRecords, TensorProtoBytesAreTensorFlows) {
  Tensor t = tensor<float>({1.5f, 2, 3, 4}, Shape{2, 2});
  const std::string tf_bytes = unhex("08011208120208021202080222100000c03f000000400000404000008040");
  EXPECT_EQ(io::serialize_tensor(t), tf_bytes);
  Tensor back = io::parse_tensor(tf_bytes, DType::float32);
  EXPECT_EQ(back.shape(), (Shape{2, 2}));
  EXPECT_EQ(back.to_vector<float>(), t.to_vector<float>());
  EXPECT_EQ(io::serialize_tensor(string_tensor({"a", "bc"})), unhex("080712041202080242016142026263"));
  EXPECT_EQ(io::serialize_tensor(zeros(Shape{0, 3})), unhex("08011206120012020803"));
  ef::testing::expect_error([&] { io::parse_tensor(tf_bytes, DType::int32); }, {"Type mismatch between parsed tensor (float) and dtype (int32)"});
  ef::testing::expect_error([&] { io::parse_tensor("\xff\xff", DType::int32); }, {"Could not parse"});
  // A shape of 2^60 elements with no data: an error, no allocation.
  ef::testing::expect_error([&] { io::parse_tensor(unhex("08011210120a0880808080808080801012020802"), DType::float32); }, {"parse_tensor"});
}

TEST(IoRecords, ParsingAndDecodingTraceAndReplay) {
  using K = io::ExampleFeature::Kind;
  std::vector<io::ExampleFeature> fs{{"id", K::fixed, DType::int64, {}, false, false},
                                     {"x", K::fixed, DType::float32, {2}, false, false}};
  auto parse = function([&](const Tensor& s) { return io::parse_example(s, fs, {}, false)[1]; });
  Tensor batch = string_tensor({unhex(kExampleHex), unhex(kExampleHex)});
  EXPECT_EQ(parse(batch).to_vector<float>(), (std::vector<float>{1.5f, -2.f, 1.5f, -2.f}));
  auto decode = function([](const Tensor& s) { return io::decode_raw(s, DType::int16, false, -1); });
  Tensor raw = string_tensor({std::string("\x00\x01\x00\x02", 4), std::string("\x01\x00\xff\xff", 4)});
  Tensor got = decode(raw);
  EXPECT_EQ(got.shape(), (Shape{2, 2}));
  EXPECT_EQ(cast(got, DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2, 256, -1}));
  Tensor padded = io::decode_raw(string_tensor({"\x01\x02\x03", "\x04"}), DType::uint8, true, 2);
  EXPECT_EQ(cast(padded, DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2, 4, 0}));
  ef::testing::expect_error([&] { io::decode_raw(string_tensor({"ab", "c"}), DType::uint8); }, {"same size"});
  ef::testing::expect_error([&] { io::decode_raw(string_tensor({"abc"}), DType::int16); }, {"not a multiple of 2"});
}

// Saved graphs keep the ops as name + parameter text: both read back to the same op.
TEST(IoRecords, OpsReadBackFromTheirParameters) {
  using K = io::ExampleFeature::Kind;
  std::vector<io::ExampleFeature> fs{{"a \"quoted\" key:1", K::fixed_sequence, DType::string, {2, 3}, true, true},
                                     {"", K::var_len_sequence, DType::int64, {}, false, false}};
  auto trace = function([&](const Tensor& s) { return io::parse_example(s, fs, {string_scalar("d")}, true)[0]; });
  Tensor x = string_tensor({"x"});
  auto concrete = trace.get_concrete_function(x);
  int seen = 0;
  for (const auto& node : concrete->traced_graph().nodes) {
    if (std::string(node.op->name()) != "parse_example" && std::string(node.op->name()) != "decode_raw") continue;
    auto back = io::decode_op(node.op->name(), node.op->attrs(), "test");
    EXPECT_TRUE(back->is_equivalent(*node.op)) << node.op->attrs();
    ++seen;
  }
  EXPECT_EQ(seen, 1);
}

}  // namespace
