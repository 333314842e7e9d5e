// String tensors (eagerflow/core/string_tensor.h) and ef::strings (eagerflow/ops/strings.h):
// values checked against TF's documented results, eager == traced, bytes kept alive through
// every op that moves elements, and the errors of bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "eagerflow/core/string_tensor.h"
#include "eagerflow/eagerflow.h"
#include "eagerflow/io/files.h"
#include "eagerflow/ops/strings.h"

namespace {

using ef::Shape;
using ef::Tensor;
namespace st = ef::strings;

std::vector<std::string> S(const Tensor& t) { return ef::string_values(t); }

TEST(StringTensor, MakesReadsAndPrints) {
  Tensor t = ef::string_tensor({"a", "bc", ""}, Shape{3});
  EXPECT_EQ(t.dtype(), ef::DType::string);
  EXPECT_EQ(S(t), (std::vector<std::string>{"a", "bc", ""}));
  EXPECT_EQ(t.str(), "Tensor([b'a' b'bc' b''], shape=(3,), dtype=string)");
  EXPECT_EQ(ef::string_scalar("it's \"q\"\n\xff").str(), "Tensor(b'it\\'s \"q\"\\n\\xff', shape=(), dtype=string)");
  EXPECT_EQ(ef::string_scalar("it's").str(), "Tensor(b\"it's\", shape=(), dtype=string)");
  EXPECT_EQ(ef::name_of(ef::DType::string), "string");
  EXPECT_EQ(ef::dtype_named("string"), ef::DType::string);
  EXPECT_THROW(ef::string_tensor({"a"}, Shape{2}), ef::Error);
}

TEST(StringTensor, MovesElementsAndKeepsTheirBytesAlive) {
  Tensor moved;
  {
    Tensor t = ef::string_tensor({"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}, Shape{2, 3});
    Tensor a = ef::transpose(t, {1, 0});
    Tensor b = ef::slice(a, {1, 0}, {3, 2});
    Tensor c = ef::gather(ef::reshape(t, {6}), ef::tensor<std::int32_t>({5, 0}), 0);
    Tensor d = ef::concat({b, ef::reshape(c, {2, 1})}, 1);
    moved = ef::broadcast_to(ef::expand_dims(d, 0), Shape{2, 2, 3});
  }  // every source tensor is gone: the views must still read the bytes
  EXPECT_EQ(S(moved), (std::vector<std::string>{"beta", "epsilon", "zeta", "gamma", "zeta", "alpha", "beta", "epsilon",
                                                "zeta", "gamma", "zeta", "alpha"}));
  EXPECT_EQ(S(moved.clone()), S(moved));
}

TEST(StringTensor, NumericOpsRefuseStringsWithADtypeError) {
  Tensor t = ef::string_tensor({"1", "2"});
  EXPECT_EQ(S(ef::add(t, t)), (std::vector<std::string>{"11", "22"}));  // TF's add concatenates strings
  try {
    ef::sub(t, t);
    FAIL() << "sub took strings";
  } catch (const ef::Error& e) {
    EXPECT_EQ(e.code(), ef::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("does not take string tensors"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ef::cast(t, ef::DType::float32), ef::Error);
  EXPECT_THROW(ef::sum(t), ef::Error);
}

TEST(Strings, ElementwiseFunctions) {
  Tensor t = ef::string_tensor({"  Hello World ", "\tABC def\n", ""});
  EXPECT_EQ(S(st::lower(t)), (std::vector<std::string>{"  hello world ", "\tabc def\n", ""}));
  EXPECT_EQ(S(st::upper(t)), (std::vector<std::string>{"  HELLO WORLD ", "\tABC DEF\n", ""}));
  EXPECT_EQ(S(st::strip(t)), (std::vector<std::string>{"Hello World", "ABC def", ""}));
  EXPECT_EQ(st::length(t).to_vector<std::int32_t>(), (std::vector<std::int32_t>{14, 9, 0}));
  Tensor u = ef::string_tensor({"h\xC3\xA9llo", "\xE2\x82\xAC", "\xF0\x9F\x98\x80!"});
  EXPECT_EQ(st::length(u, st::Unit::utf8_char).to_vector<std::int32_t>(), (std::vector<std::int32_t>{5, 1, 2}));
  EXPECT_EQ(st::length(u).to_vector<std::int32_t>(), (std::vector<std::int32_t>{6, 3, 5}));
}

TEST(Strings, RegexesAreRe2) {
  Tensor t = ef::string_tensor({"abc123", "abc", "123"});
  EXPECT_EQ(st::regex_full_match(t, "[a-z]+\\d*").to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(S(st::regex_replace(t, "\\d", "#")), (std::vector<std::string>{"abc###", "abc", "###"}));
  EXPECT_EQ(S(st::regex_replace(t, "\\d", "#", false)), (std::vector<std::string>{"abc#23", "abc", "#23"}));
  EXPECT_EQ(S(st::regex_replace(t, "([a-z]+)(\\d+)", "\\2-\\1")), (std::vector<std::string>{"123-abc", "abc", "123"}));
  EXPECT_THROW(st::regex_full_match(t, "(unclosed"), ef::Error);
  EXPECT_THROW(st::regex_replace(t, "(a)", "\\2"), ef::Error);  // no group 2
  // RE2 runs in linear time: the classic catastrophic pattern returns at once.
  Tensor evil = ef::string_tensor({std::string(5000, 'a') + "!"});
  EXPECT_FALSE(st::regex_full_match(evil, "(a+)+$").item<bool>());
}

TEST(Strings, NumbersToAndFromText) {
  Tensor t = ef::string_tensor({"3.25", " -7 ", "1e3", "+2", "inf"});
  EXPECT_EQ(st::to_number(t).to_vector<float>(), (std::vector<float>{3.25f, -7.f, 1000.f, 2.f, INFINITY}));
  EXPECT_EQ(st::to_number(ef::string_tensor({"12", "-3"}), ef::DType::int64).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{12, -3}));
  EXPECT_THROW(st::to_number(ef::string_tensor({"1.5"}), ef::DType::int32), ef::Error);
  EXPECT_THROW(st::to_number(ef::string_tensor({"abc"})), ef::Error);
  EXPECT_THROW(st::to_number(ef::string_tensor({""})), ef::Error);
  EXPECT_EQ(S(st::as_string(ef::tensor({1.5f, -2.f}))), (std::vector<std::string>{"1.500000", "-2.000000"}));
  EXPECT_EQ(S(st::as_string(ef::tensor({1.5f}), {.precision = 2})), (std::vector<std::string>{"1.50"}));
  EXPECT_EQ(S(st::as_string(ef::tensor({1234.5f}), {.scientific = true})), (std::vector<std::string>{"1.234500e+03"}));
  EXPECT_EQ(S(st::as_string(ef::tensor({0.25f}), {.shortest = true})), (std::vector<std::string>{"0.25"}));
  EXPECT_EQ(S(st::as_string(ef::tensor<std::int32_t>({7, -12}), {.width = 4, .fill = "0"})),
            (std::vector<std::string>{"0007", "-012"}));
  EXPECT_EQ(S(st::as_string(ef::tensor<bool>({true, false}))), (std::vector<std::string>{"true", "false"}));
  EXPECT_THROW(st::as_string(ef::tensor<std::int32_t>({1}), {.precision = 2}), ef::Error);
  EXPECT_THROW(st::as_string(ef::string_tensor({"x"})), ef::Error);
}

TEST(Strings, JoinCompareSubstr) {
  Tensor a = ef::string_tensor({"a", "b"}), b = ef::string_tensor({"x", "y"});
  EXPECT_EQ(S(st::join({a, ef::string_scalar("-"), b}, "+")), (std::vector<std::string>{"a+-+x", "b+-+y"}));
  EXPECT_EQ(ef::equal(a, ef::string_scalar("b")).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(ef::not_equal(a, b).to_vector<bool>(), (std::vector<bool>{true, true}));
  Tensor s = ef::string_tensor({"Hello", "World"});
  EXPECT_EQ(S(st::substr(s, ef::scalar<std::int32_t>(1), ef::scalar<std::int32_t>(3))),
            (std::vector<std::string>{"ell", "orl"}));
  EXPECT_EQ(S(st::substr(s, ef::tensor<std::int32_t>({-2, 3}), ef::scalar<std::int32_t>(10))),
            (std::vector<std::string>{"lo", "ld"}));
  EXPECT_THROW(st::substr(s, ef::scalar<std::int32_t>(6), ef::scalar<std::int32_t>(1)), ef::Error);
  Tensor u = ef::string_tensor({"h\xC3\xA9llo"});
  EXPECT_EQ(S(st::substr(u, ef::scalar<std::int32_t>(1), ef::scalar<std::int32_t>(2), st::Unit::utf8_char)),
            (std::vector<std::string>{"\xC3\xA9l"}));
}

TEST(Strings, ReduceAndSegmentJoin) {
  Tensor t = ef::string_tensor({"a", "b", "c", "d", "e", "f"}, Shape{2, 3});
  EXPECT_EQ(S(st::reduce_join(t)), (std::vector<std::string>{"abcdef"}));
  EXPECT_EQ(S(st::reduce_join(t, std::vector<int>{1}, false, ",")), (std::vector<std::string>{"a,b,c", "d,e,f"}));
  EXPECT_EQ(S(st::reduce_join(t, std::vector<int>{0}, false, ",")), (std::vector<std::string>{"a,d", "b,e", "c,f"}));
  EXPECT_EQ(st::reduce_join(t, std::vector<int>{-1}, true).shape(), (Shape{2, 1}));
  Tensor w = ef::string_tensor({"x", "y", "z", "w"});
  EXPECT_EQ(S(st::unsorted_segment_join(w, ef::tensor<std::int32_t>({1, 0, 1, 1}), 3, ":")),
            (std::vector<std::string>{"y", "x:z:w", ""}));
  EXPECT_THROW(st::unsorted_segment_join(w, ef::tensor<std::int32_t>({1, 0, 3, 1}), 3), ef::Error);
}

TEST(Strings, SplitsIntoRaggedRows) {
  Tensor t = ef::string_tensor({"a b  c", "", "  d "});
  st::Pieces ws = st::split(t);
  EXPECT_EQ(S(ws.values), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(ws.row_splits.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 3, 3, 4}));
  st::Pieces sep = st::split(ef::string_tensor({"a,,b", ""}), std::string(","));
  EXPECT_EQ(S(sep.values), (std::vector<std::string>{"a", "", "b", ""}));
  EXPECT_EQ(sep.row_splits.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 3, 4}));
  st::Pieces limited = st::split(ef::string_tensor({"a,b,c"}), std::string(","), 1);
  EXPECT_EQ(S(limited.values), (std::vector<std::string>{"a", "b,c"}));
  st::Pieces chars = st::unicode_split(ef::string_tensor({"h\xC3\xA9!", "\xFFx"}));
  EXPECT_EQ(S(chars.values), (std::vector<std::string>{"h", "\xC3\xA9", "!", "\xEF\xBF\xBD", "x"}));
  EXPECT_EQ(chars.starts.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 3, 0, 1}));
  st::Pieces cps = st::unicode_decode(ef::string_tensor({"h\xC3\xA9", "\xE2\x82\xAC"}));
  EXPECT_EQ(cps.values.to_vector<std::int32_t>(), (std::vector<std::int32_t>{104, 233, 8364}));
  Tensor back = st::unicode_encode(cps.values, cps.row_splits);
  EXPECT_EQ(S(back), (std::vector<std::string>{"h\xC3\xA9", "\xE2\x82\xAC"}));
  EXPECT_EQ(S(st::unicode_encode(ef::tensor<std::int32_t>({-1, 0x110000, 65}), ef::tensor<std::int64_t>({0, 3}))),
            (std::vector<std::string>{"\xEF\xBF\xBD\xEF\xBF\xBD" "A"}));
  EXPECT_EQ(S(st::bytes_split(ef::string_scalar("ab")).values), (std::vector<std::string>{"a", "b"}));
  EXPECT_THROW(st::split(ef::string_tensor({"a"}, Shape{1, 1})), ef::Error);
}

TEST(Strings, Base64IsWebSafe) {
  Tensor t = ef::string_tensor({"", "f", "fo", "foo", "\xfb\xff"});
  EXPECT_EQ(S(st::encode_base64(t)), (std::vector<std::string>{"", "Zg", "Zm8", "Zm9v", "-_8"}));
  EXPECT_EQ(S(st::encode_base64(t, true)), (std::vector<std::string>{"", "Zg==", "Zm8=", "Zm9v", "-_8="}));
  EXPECT_EQ(S(st::decode_base64(st::encode_base64(t))), S(t));
  EXPECT_EQ(S(st::decode_base64(st::encode_base64(t, true))), S(t));
  EXPECT_THROW(st::decode_base64(ef::string_tensor({"ab+/"})), ef::Error);
}

TEST(Strings, HashBucketsMatchTensorFlow) {
  // Buckets TF 2.21 computes for these strings (tf.strings.to_hash_bucket_fast / _strong / plain).
  Tensor t = ef::string_tensor({"", "a", "hello", "The quick brown fox jumps over the lazy dog",
                                std::string(100, 'x') + "tail of a long string that crosses 64 bytes"});
  constexpr std::int64_t n = std::int64_t{1} << 62;
  EXPECT_EQ(st::to_hash_bucket_fast(t, n).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1936946117179621455, 3694432073954588131, 3786372426573024488,
                                       3152101869897863476, 3762671648260766846}));
  EXPECT_EQ(st::to_hash_bucket(t, n).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{105434511174508091, 2996632905371535868, 1331861223480393034,
                                       1687480807060433122, 3169083096694817736}));
  EXPECT_EQ(st::to_hash_bucket_strong(t, n, 1, 2).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{443797209252341627, 546566331822570742, 2957200328589801622,
                                       150232139108451824, 2881199295173499465}));
  EXPECT_THROW(st::to_hash_bucket_fast(t, 0), ef::Error);
}

TEST(Strings, TracedEqualsEager) {
  Tensor t = ef::string_tensor({"Ab c", "DE f"});
  auto f = [](const Tensor& x) {
    Tensor y = st::lower(st::regex_replace(x, " ", "_"));
    return st::join({y, st::as_string(st::length(y))}, ":");
  };
  auto traced = ef::function([&](const Tensor& x) { return f(x); });
  Tensor out = traced(t);
  EXPECT_EQ(S(out), S(f(t)));
  EXPECT_EQ(S(out), (std::vector<std::string>{"ab_c:4", "de_f:4"}));
  // Replayed with other strings: the graph holds no values of the first call.
  EXPECT_EQ(S(traced(ef::string_tensor({"X Y", "z"}))), (std::vector<std::string>{"x_y:3", "z:1"}));
  EXPECT_EQ(traced.tracing_count(), 1);
}

}  // namespace

namespace {

TEST(FileOps, ReadAndWriteFilesAtEveryCall) {
  auto dir = std::filesystem::temp_directory_path() / ("ef_file_ops_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Tensor path = ef::string_scalar((dir / "a.bin").string());
  std::string bytes("x\0y\xff", 4);
  ef::io::write_file(path, ef::string_scalar(bytes));
  EXPECT_EQ(std::string(ef::io::read_file(path).item<std::string_view>()), bytes);
  auto read = ef::function([](const Tensor& p) { return ef::io::read_file(p); });
  EXPECT_EQ(std::string(read(path).item<std::string_view>()), bytes);
  ef::io::write_file(path, ef::string_scalar("changed"));
  EXPECT_EQ(std::string(read(path).item<std::string_view>()), "changed");  // read again, not a constant
  try {
    ef::io::read_file(ef::string_scalar((dir / "missing").string()));
    FAIL() << "read a missing file";
  } catch (const ef::Error& e) {
    EXPECT_EQ(e.code(), ef::ErrorCode::not_found);
  }
  EXPECT_THROW(ef::io::read_file(ef::string_tensor({"a", "b"})), ef::Error);
  std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

TEST(StringTensor, PrintWritesStringsAsTfPrintDoes) {
  std::vector<std::string> printed;
  ef::set_print_sink([&](std::string_view s) { printed.emplace_back(s); });
  ef::print(ef::string_scalar("hi there"));
  ef::print(ef::string_tensor({"a", "b c"}));
  ef::set_print_sink(nullptr);
  ASSERT_EQ(printed.size(), 2u);
  EXPECT_EQ(printed[0], "hi there\n");
  EXPECT_EQ(printed[1], "[\"a\" \"b c\"]\n");
  // str() keeps Python's bytes form, as TF's repr does.
  EXPECT_EQ(ef::string_scalar("hi").str(), "Tensor(b'hi', shape=(), dtype=string)");
}

}  // namespace
