// TF's narrow and unsigned integers (uint8, int8, int16, uint16, uint32, uint64) as storage
// dtypes: names and sizes, casts that wrap as tf.cast (reference values computed by TF 2.21),
// saturate_cast, arithmetic that wraps as TF's (computed in int32/int64 and cast back), index
// outputs that keep their dtype, movement ops on 1- and 2-byte elements, eager == traced,
// no gradients through integers, mixing errors, and safetensors round trips.
#include <cstring>
#include <fstream>
#include <limits>

#include "eagerflow/io/safetensors.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

namespace {

constexpr DType kNew[] = {DType::uint8, DType::int8, DType::int16, DType::uint16, DType::uint32, DType::uint64};

template <class T>
std::vector<T> as(const Tensor& t) {
  return t.to_vector<T>();
}
template <class T>
Tensor make(std::vector<T> v, Shape s = {}) {
  if (s.rank() == 0 && v.size() != 1) s = Shape{static_cast<std::int64_t>(v.size())};
  return tensor<T>(v, s);
}
std::vector<std::int64_t> as_i64(const Tensor& t) { return cast(t, DType::int64).to_vector<std::int64_t>(); }

}  // namespace

TEST(IntStorageDtypes, NamesSizesAndPredicates) {
  EXPECT_EQ(static_cast<int>(DType::uint8), 7);
  EXPECT_EQ(static_cast<int>(DType::uint64), 12);
  const char* longs[] = {"uint8", "int8", "int16", "uint16", "uint32", "uint64"};
  const char* shorts[] = {"u8", "i8", "i16", "u16", "u32", "u64"};
  const std::size_t sizes[] = {1, 1, 2, 2, 4, 8};
  for (int i = 0; i < 6; ++i) {
    DType t = kNew[i];
    EXPECT_EQ(std::string(name_of(t)), longs[i]);
    EXPECT_EQ(std::string(short_name_of(t)), shorts[i]);
    EXPECT_EQ(dtype_named(longs[i]), t);
    EXPECT_EQ(dtype_named(shorts[i]), t);
    EXPECT_EQ(size_of(t), sizes[i]);
    EXPECT_TRUE(is_integer(t));
    EXPECT_FALSE(is_floating(t));
    EXPECT_TRUE(is_storage_dtype(t));
    EXPECT_FALSE(is_index_dtype(t));
    EXPECT_EQ(compute_dtype_of(t), size_of(t) >= 4 ? DType::int64 : DType::int32);
  }
  EXPECT_TRUE(is_unsigned(DType::uint8) && is_unsigned(DType::uint64) && !is_unsigned(DType::int8));
  EXPECT_EQ(all_dtypes.size(), 16u);  // with string, complex64 and complex128
}

TEST(IntStorageDtypes, IntegerNarrowingWrapsAsTfCast) {
  // tf.cast(tf.constant([300, -1, 70000, -129, 2**40 + 5], tf.int64), T).numpy() in TF 2.21.
  Tensor x = make<std::int64_t>({300, -1, 70000, -129, (std::int64_t{1} << 40) + 5});
  EXPECT_EQ(as<std::uint8_t>(cast(x, DType::uint8)), (std::vector<std::uint8_t>{44, 255, 112, 127, 5}));
  EXPECT_EQ(as<std::int8_t>(cast(x, DType::int8)), (std::vector<std::int8_t>{44, -1, 112, 127, 5}));
  EXPECT_EQ(as<std::int16_t>(cast(x, DType::int16)), (std::vector<std::int16_t>{300, -1, 4464, -129, 5}));
  EXPECT_EQ(as<std::uint16_t>(cast(x, DType::uint16)), (std::vector<std::uint16_t>{300, 65535, 4464, 65407, 5}));
  EXPECT_EQ(as<std::uint32_t>(cast(x, DType::uint32)),
            (std::vector<std::uint32_t>{300, 4294967295u, 70000, 4294967167u, 5}));
  EXPECT_EQ(as<std::uint64_t>(cast(x, DType::uint64)),
            (std::vector<std::uint64_t>{300, 18446744073709551615ull, 70000, 18446744073709551487ull, 1099511627781ull}));
  // Widening back is exact.
  EXPECT_EQ(as_i64(cast(cast(x, DType::uint16), DType::int64)), (std::vector<std::int64_t>{300, 65535, 4464, 65407, 5}));
}

TEST(IntStorageDtypes, FloatsTruncateTowardZeroThenWrap) {
  // tf.cast(tf.constant([300.0, -1.0, 2.7, -2.7, nan], tf.float32), T) in TF 2.21.
  Tensor f = make<float>({300.0f, -1.0f, 2.7f, -2.7f, std::numeric_limits<float>::quiet_NaN()});
  EXPECT_EQ(as<std::uint8_t>(cast(f, DType::uint8)), (std::vector<std::uint8_t>{44, 255, 2, 254, 0}));
  EXPECT_EQ(as<std::int8_t>(cast(f, DType::int8)), (std::vector<std::int8_t>{44, -1, 2, -2, 0}));
  EXPECT_EQ(as<std::uint16_t>(cast(f, DType::uint16)), (std::vector<std::uint16_t>{300, 65535, 2, 65534, 0}));
  EXPECT_EQ(as<std::uint32_t>(cast(f, DType::uint32)), (std::vector<std::uint32_t>{300, 4294967295u, 2, 4294967294u, 0}));
  EXPECT_EQ(as<std::uint64_t>(cast(cast(f, DType::float64), DType::uint64)),
            (std::vector<std::uint64_t>{300, 18446744073709551615ull, 2, 18446744073709551614ull, 0}));
  // float64 beyond int32 to uint32 goes through int64 (TF: 1e10 -> 1410065408).
  EXPECT_EQ(as<std::uint32_t>(cast(make<double>({1e10}), DType::uint32)), (std::vector<std::uint32_t>{1410065408u}));
  // 8- and 16-bit targets: beyond int32 (and infinities) give 0, as TF's.
  EXPECT_EQ(as<std::int16_t>(cast(make<float>({1e10f, -std::numeric_limits<float>::infinity()}), DType::int16)),
            (std::vector<std::int16_t>{0, 0}));
  // float16 and bfloat16 go through float32 (TF: [3.7, 250.6] f16 -> uint8 [3, 250]).
  EXPECT_EQ(as<std::uint8_t>(cast(cast(make<float>({3.7f, 250.6f}), DType::float16), DType::uint8)),
            (std::vector<std::uint8_t>{3, 250}));
  EXPECT_EQ(as<std::uint8_t>(cast(cast(make<float>({3.7f, -3.7f}), DType::bfloat16), DType::uint8)),
            (std::vector<std::uint8_t>{3, 253}));
  // And back to floats, exactly.
  EXPECT_EQ(as<float>(cast(make<std::uint8_t>({0, 1, 255}), DType::float32)), (std::vector<float>{0, 1, 255}));
  EXPECT_EQ(cast(cast(make<std::uint64_t>({18446744073709551615ull}), DType::float64), DType::float64).item<double>(),
            18446744073709551616.0);
  EXPECT_EQ(as<float>(cast(cast(make<std::int16_t>({-300, 100}), DType::float16), DType::float32)),
            (std::vector<float>{-300, 100}));
}

TEST(IntStorageDtypes, BoolsConvertBothWays) {
  for (DType t : kNew) {
    EXPECT_EQ(as<bool>(cast(cast(make<std::int64_t>({0, 1, 2}), t), DType::bool_)), (std::vector<bool>{false, true, true}))
        << name_of(t);
    EXPECT_EQ(as_i64(cast(make<bool>({true, false}), t)), (std::vector<std::int64_t>{1, 0})) << name_of(t);
  }
}

TEST(IntStorageDtypes, SaturateCastClampsToTheTargetsRange) {
  // tf.dtypes.saturate_cast in TF 2.21.
  Tensor f = make<float>({300.0f, -1.0f, 2.7f, -2.7f, 1e10f, -1e10f, std::numeric_limits<float>::quiet_NaN()});
  EXPECT_EQ(as<std::uint8_t>(saturate_cast(f, DType::uint8)), (std::vector<std::uint8_t>{255, 0, 2, 0, 255, 0, 0}));
  EXPECT_EQ(as<std::int8_t>(saturate_cast(f, DType::int8)), (std::vector<std::int8_t>{127, -1, 2, -2, 127, -128, 0}));
  EXPECT_EQ(as<std::int16_t>(saturate_cast(f, DType::int16)),
            (std::vector<std::int16_t>{300, -1, 2, -2, 32767, -32768, 0}));
  EXPECT_EQ(as<std::uint32_t>(saturate_cast(f, DType::uint32)),
            (std::vector<std::uint32_t>{300, 0, 2, 0, 4294967040u, 0, 0}));  // float32's largest below 2^32
  EXPECT_EQ(as<std::uint64_t>(saturate_cast(f, DType::uint64)),
            (std::vector<std::uint64_t>{300, 0, 2, 0, 10000000000ull, 0, 0}));
  Tensor i = make<std::int64_t>({300, -1, 70000, -129});
  EXPECT_EQ(as<std::uint8_t>(saturate_cast(i, DType::uint8)), (std::vector<std::uint8_t>{255, 0, 255, 0}));
  EXPECT_EQ(as<std::int8_t>(saturate_cast(i, DType::int8)), (std::vector<std::int8_t>{127, -1, 127, -128}));
  EXPECT_EQ(as<std::uint16_t>(saturate_cast(i, DType::uint16)), (std::vector<std::uint16_t>{300, 0, 65535, 0}));
  EXPECT_EQ(as<std::uint32_t>(saturate_cast(i, DType::uint32)), (std::vector<std::uint32_t>{300, 0, 70000, 0}));
  // TF 2.21 gives [0, 0, 0, 0] here (its uint64 bound overflows); the clamp gives the values.
  EXPECT_EQ(as<std::uint64_t>(saturate_cast(i, DType::uint64)), (std::vector<std::uint64_t>{300, 0, 70000, 0}));
  EXPECT_EQ(as<std::int32_t>(saturate_cast(make<std::uint64_t>({18446744073709551615ull, 5}), DType::int32)),
            (std::vector<std::int32_t>{2147483647, 5}));
  EXPECT_EQ(as<std::int64_t>(saturate_cast(make<std::uint64_t>({18446744073709551615ull}), DType::int64)),
            (std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::max()}));
  EXPECT_EQ(as<std::uint8_t>(saturate_cast(make<std::int8_t>({-5, 7}), DType::uint8)), (std::vector<std::uint8_t>{0, 7}));
}

TEST(IntStorageDtypes, ArithmeticWrapsAsTfs) {
  // TF 2.21: uint8 [200, 100, 255] + [100, 200, 1] = [44, 44, 0]; reduce_sum 43, mean 185,
  // prod 224, max 255; int8 sum of [100, 100, 100] is 44; uint16 [1, 2] - [3, 1] = [65534, 1].
  Tensor a = make<std::uint8_t>({200, 100, 255}), b = make<std::uint8_t>({100, 200, 1});
  Tensor s = a + b;
  EXPECT_EQ(s.dtype(), DType::uint8);
  EXPECT_EQ(as<std::uint8_t>(s), (std::vector<std::uint8_t>{44, 44, 0}));
  EXPECT_EQ(as<std::uint8_t>(sum(a)), (std::vector<std::uint8_t>{43}));
  EXPECT_EQ(as<std::uint8_t>(mean(a)), (std::vector<std::uint8_t>{185}));
  EXPECT_EQ(as<std::uint8_t>(max(a)), (std::vector<std::uint8_t>{255}));
  EXPECT_EQ(as<std::uint8_t>(a * 2.0), (std::vector<std::uint8_t>{144, 200, 254}));
  EXPECT_EQ(as<std::int8_t>(sum(make<std::int8_t>({100, 100, 100}))), (std::vector<std::int8_t>{44}));
  EXPECT_EQ(as<std::uint16_t>(make<std::uint16_t>({1, 2}) - make<std::uint16_t>({3, 1})),
            (std::vector<std::uint16_t>{65534, 1}));
  EXPECT_EQ(as<std::uint8_t>(cumsum(make<std::uint8_t>({200, 100}))), (std::vector<std::uint8_t>{200, 44}));
  EXPECT_EQ(as<std::uint8_t>(maximum(make<std::uint8_t>({3, 250}), make<std::uint8_t>({5, 1}))),
            (std::vector<std::uint8_t>{5, 250}));
  // Every dtype against the same computation done in int64 and wrapped by a cast (NumPy's rule).
  Tensor x = make<std::int64_t>({7, 120, 3, 0}), y = make<std::int64_t>({5, 9, 3, 1});
  for (DType t : kNew) {
    Tensor xt = cast(x, t), yt = cast(y, t);
    Tensor r = (xt + yt) * yt - xt;
    EXPECT_EQ(r.dtype(), t);
    EXPECT_EQ(as_i64(r), as_i64(cast((x + y) * y - x, t))) << name_of(t);
    EXPECT_EQ(as<bool>(xt < yt), (std::vector<bool>{false, false, false, true})) << name_of(t);
    EXPECT_EQ(as_i64(sum(xt)), as_i64(cast(sum(x), t))) << name_of(t);
  }
  // uint32 computes in int64: its full range adds without loss before the wrap.
  EXPECT_EQ(as<std::uint32_t>(make<std::uint32_t>({4294967295u}) + make<std::uint32_t>({2})),
            (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(as<std::uint64_t>(make<std::uint64_t>({18446744073709551615ull}) + make<std::uint64_t>({2})),
            (std::vector<std::uint64_t>{1}));
}

TEST(IntStorageDtypes, IndexOutputsKeepTheirDtype) {
  Tensor x = make<std::uint32_t>({3, 4000000000u, 1});
  Tensor am = argmax(x, 0);
  EXPECT_EQ(am.dtype(), DType::int64);
  EXPECT_EQ(am.item<std::int64_t>(), 1);
  Tensor as_ = argsort(x);
  EXPECT_EQ(as_.dtype(), DType::int64);
  EXPECT_EQ(as<std::int64_t>(as_), (std::vector<std::int64_t>{2, 0, 1}));
  Tensor sorted = sort(x);
  EXPECT_EQ(sorted.dtype(), DType::uint32);
  EXPECT_EQ(as<std::uint32_t>(sorted), (std::vector<std::uint32_t>{1, 3, 4000000000u}));
  // top_k of uint8 computes in int32: the int32 indices stay int32, the values become uint8.
  auto [values, indices] = top_k(make<std::uint8_t>({0, 5, 3}), 2);
  EXPECT_EQ(values.dtype(), DType::uint8);
  EXPECT_EQ(as<std::uint8_t>(values), (std::vector<std::uint8_t>{5, 3}));
  EXPECT_EQ(indices.dtype(), DType::int32);
  EXPECT_EQ(as<std::int32_t>(indices), (std::vector<std::int32_t>{1, 2}));
  // one_hot of uint8 indices: the rows are the requested dtype, int32 included.
  Tensor oh = one_hot(make<std::uint8_t>({1, 0}), 3, DType::int32);
  EXPECT_EQ(oh.dtype(), DType::int32);
  EXPECT_EQ(as<std::int32_t>(oh), (std::vector<std::int32_t>{0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(shape(make<std::int8_t>({1, 2})).dtype(), DType::int64);
  // take_along_axis: int32 indices into uint8 data.
  Tensor tk = take_along_axis(make<std::uint8_t>({10, 20, 30}), make<std::int32_t>({2, 0}), 0);
  EXPECT_EQ(tk.dtype(), DType::uint8);
  EXPECT_EQ(as<std::uint8_t>(tk), (std::vector<std::uint8_t>{30, 10}));
}

TEST(IntStorageDtypes, MovementOpsCopyOneAndTwoByteElements) {
  Tensor u8 = make<std::uint8_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(as<std::uint8_t>(transpose(u8, {1, 0})), (std::vector<std::uint8_t>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(reshape(u8, {3, 2}).dtype(), DType::uint8);
  EXPECT_EQ(as<std::uint8_t>(slice(u8, {0, 1}, {2, 3}, {1, 1})), (std::vector<std::uint8_t>{2, 3, 5, 6}));
  EXPECT_EQ(as<std::uint8_t>(concat({u8, u8}, 0)).size(), 12u);
  EXPECT_EQ(as<std::uint8_t>(gather(make<std::uint8_t>({1, 2, 3}), make<std::int32_t>({2, 0}), 0)),
            (std::vector<std::uint8_t>{3, 1}));
  Tensor i16 = make<std::int16_t>({-1, 2, -3, 4}, Shape{2, 2});
  EXPECT_EQ(as<std::int16_t>(transpose(i16, {1, 0})), (std::vector<std::int16_t>{-1, -3, 2, 4}));
  EXPECT_EQ(as<std::int16_t>(broadcast_to(make<std::int16_t>({7, -8}), Shape{2, 2})),
            (std::vector<std::int16_t>{7, -8, 7, -8}));
  EXPECT_EQ(as<std::uint16_t>(tile(make<std::uint16_t>({65535, 1}), {2})), (std::vector<std::uint16_t>{65535, 1, 65535, 1}));
  EXPECT_EQ(as<std::uint64_t>(concat({make<std::uint64_t>({18446744073709551615ull}, Shape{1}), make<std::uint64_t>({1}, Shape{1})}, 0)),
            (std::vector<std::uint64_t>{18446744073709551615ull, 1}));
  EXPECT_EQ(as<std::int8_t>(where(make<bool>({true, false}), make<std::int8_t>({-5, 6}), make<std::int8_t>({7, -8}))),
            (std::vector<std::int8_t>{-5, -8}));
  EXPECT_EQ(as<std::uint8_t>(full(Shape{2}, 7.0, DType::uint8)), (std::vector<std::uint8_t>{7, 7}));
  EXPECT_EQ(as<std::int16_t>(arange(-2.0, 2.0, 1.0, DType::int16)), (std::vector<std::int16_t>{-2, -1, 0, 1}));
  EXPECT_NE(u8.str().find("uint8"), std::string::npos);
}

TEST(IntStorageDtypes, MixingDtypesIsAnError) {
  Tensor a = make<std::uint8_t>({1, 2});
  // TF: tf.constant(1, tf.uint8) + tf.constant(1) raises InvalidArgumentError.
  expect_error([&] { a + make<std::int32_t>({1, 1}); }, {"dtypes differ", "uint8 and int32 do not mix"});
  expect_error([&] { a + make<std::int8_t>({1, 1}); }, {"dtypes differ", "uint8 and int8 do not mix"});
  expect_error([&] { make<std::uint32_t>({1}) + make<std::int64_t>({1}); }, {"dtypes differ", "uint32 and int64"});
  expect_error([&] { a + make<float>({1, 1}); }, {"dtypes differ"});
  expect_error([&] { gather(make<float>({1, 2}), a, 0); }, {"indices must be int32 or int64"});
}

TEST(IntStorageDtypes, TracedEqualsEagerAndIntegersHaveNoGradient) {
  auto body = [](const Tensor& t) { return sum(t * t + t, {0}) - t; };
  for (DType d : kNew) {
    Tensor x = cast(make<std::int64_t>({200, 17, 3, 255}, Shape{2, 2}), d);
    Tensor eager = body(x);
    auto f = function(body);
    Tensor traced = f(x);
    EXPECT_EQ(traced.dtype(), d);
    EXPECT_EQ(as_i64(traced), as_i64(eager)) << name_of(d);
  }
  // TF: no gradient through an integer (tape.gradient gives None).
  Tensor w = tensor<float>({1.5f, 2.5f});
  GradientTape tape;
  tape.watch(w);
  Tensor y = sum(cast(square(cast(w, DType::uint8)), DType::float32));
  Tensor g = tape.gradient(y, w);
  EXPECT_FALSE(g.defined());
}

TEST(IntStorageDtypes, SafetensorsSavesEachCodeAndReadsItBack) {
  auto dir = ef::testing::fresh_temp_dir("int_storage_safetensors");
  const char* codes[] = {"\"U8\"", "\"I8\"", "\"I16\"", "\"U16\"", "\"U32\"", "\"U64\""};
  for (int i = 0; i < 6; ++i) {
    Tensor x = cast(make<std::int64_t>({-1, 0, 1, 300}), kNew[i]);
    std::string path = (dir / ("w" + std::to_string(i) + ".safetensors")).string();
    io::save_safetensors(path, {{"x", x}});
    io::TensorFile file = io::load_safetensors(path);
    const Tensor* back = file.find("x");
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back->dtype(), kNew[i]);
    EXPECT_EQ(as_i64(*back), as_i64(x));
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(bytes.find(codes[i]), std::string::npos) << codes[i];
  }
}
