// bfloat16 through every op of the op table: one rule, defined with each op
// (Primitive::takes_bfloat16), instead of lists of names. An op fed bfloat16 gives what the
// float32 op gives on the same (rounded) inputs, rounded to bfloat16; integer and bool results
// keep their dtype; a traced call equals the eager one bit for bit.
#include <cstring>
#include <set>
#include <string>

#include "op_table.h"

using namespace ef;
using ef::testing::OpInfo;

namespace {

bool has_floating_input(const OpInfo& op) {
  for (const auto& in : op.inputs)
    if (in.dtype == DType::float64) return true;  // float64: "the floating dtype under test"
  return false;
}

// The table's entries that read floating inputs; the optimizer updates write float32
// variables, which bfloat16 gradients do not update (the policy keeps gradients float32).
std::vector<OpInfo> floating_ops() {
  std::vector<OpInfo> out;
  for (auto& op : ef::testing::op_table())
    if (has_floating_input(op) && !op.writes_variables) out.push_back(op);
  return out;
}

std::vector<std::uint8_t> bytes_of(const Tensor& t) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(t.num_elements()) * size_of(t.dtype()));
  if (!out.empty()) std::memcpy(out.data(), t.raw_data(), out.size());
  return out;
}

std::vector<double> values(const Tensor& t) { return cast(t, DType::float64).to_vector<double>(); }

// Entries whose function makes float32 tensors of its own beside its inputs (the second-order
// checks of the backprop ops: a float32 image or kernel, the input the cotangent): given
// bfloat16, user code mixes the two dtypes, which is an error as in TensorFlow.
bool mixes_float32_inside(const OpInfo& op) {
  static const std::set<std::string> names{"conv2d_backprop_input", "conv2d_backprop_filter", "avg_pool2d_grad"};
  return names.count(op.name) > 0;
}

// Entries that make complex tensors of their inputs: tf.complex takes float32 and float64 parts
// only (as TF's), so a bfloat16 part is an error that names the dtypes.
bool makes_complex(const OpInfo& op) {
  static const std::set<std::string> names{"complex_arithmetic", "complex_functions", "complex_matmul", "fft", "rfft_irfft"};
  return names.count(op.name) > 0;
}

class BFloat16OpTable : public ::testing::TestWithParam<OpInfo> {};

TEST_P(BFloat16OpTable, ComputesAsFloat32OnTheRoundedInputs) {
  const OpInfo& op = GetParam();
  if (mixes_float32_inside(op)) {
    std::vector<Tensor> low = ef::testing::make_inputs(op, DType::bfloat16, 5);
    ef::testing::expect_error([&] { op.fn(low); }, {"dtypes differ", "bfloat16 and float32 do not mix"});
    return;
  }
  if (makes_complex(op)) {
    std::vector<Tensor> low = ef::testing::make_inputs(op, DType::bfloat16, 5);
    ef::testing::expect_error([&] { op.fn(low); }, {"float32 or float64"});
    return;
  }
  std::vector<Tensor> wide = ef::testing::make_inputs(op, DType::float32, 5), low;
  for (auto& x : wide) {
    low.push_back(x.dtype() == DType::float32 ? cast(x, DType::bfloat16) : x);
    if (x.dtype() == DType::float32) x = cast(low.back(), DType::float32);  // the rounded values
  }
  Tensor want = op.fn(wide);
  Tensor got = op.fn(low);
  ASSERT_EQ(got.shape(), want.shape()) << op.name;
  // Floating results come back bfloat16; integer and bool ones (argmax, comparisons) keep theirs.
  EXPECT_EQ(got.dtype(), want.dtype() == DType::float32 ? DType::bfloat16 : want.dtype()) << op.name;
  // Random draws differ from call to call: their dtype and shape are what can be compared.
  if (bytes_of(op.fn(wide)) != bytes_of(want)) return;
  auto g = values(got), w = values(want);
  double scale = 0;
  for (double v : w) scale = std::max(scale, std::fabs(v));
  // One bfloat16 rounding of the result (2^-8 relative), and of intermediate results where an
  // entry chains ops; sums can cancel, so the bound is also relative to the largest value.
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << op.name << " at " << i;
      continue;
    }
    EXPECT_NEAR(g[i], w[i], 2e-2 * std::fabs(w[i]) + 1e-2 * scale + 1e-6) << op.name << " at " << i;
  }
}

class BFloat16OpTableTraced : public ::testing::TestWithParam<OpInfo> {};

TEST_P(BFloat16OpTableTraced, EqualsEagerBitForBit) {
  const OpInfo& op = GetParam();
  std::vector<Tensor> low = ef::testing::make_inputs(op, DType::float32, 6);
  for (auto& x : low)
    if (x.dtype() == DType::float32) x = cast(x, DType::bfloat16);
  Tensor eager = op.fn(low);
  auto f = function([&](const std::vector<Tensor>& xs) { return op.fn(xs); });
  Tensor traced = f(low);
  ASSERT_EQ(traced.spec(), eager.spec()) << op.name;
  if (bytes_of(op.fn(low)) != bytes_of(eager)) return;  // a random draw (see above)
  EXPECT_EQ(bytes_of(traced), bytes_of(eager)) << op.name;
  EXPECT_EQ(bytes_of(f(low)), bytes_of(eager)) << op.name;  // replay
}

std::vector<OpInfo> traceable_ops() {  // those that run on bfloat16 (not mixing it inside)
  std::vector<OpInfo> out;
  for (auto& op : floating_ops())
    if (!mixes_float32_inside(op) && !makes_complex(op)) out.push_back(op);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Table, BFloat16OpTable, ::testing::ValuesIn(floating_ops()),
                         [](const ::testing::TestParamInfo<OpInfo>& i) { return i.param.name; });
INSTANTIATE_TEST_SUITE_P(Table, BFloat16OpTableTraced, ::testing::ValuesIn(traceable_ops()),
                         [](const ::testing::TestParamInfo<OpInfo>& i) { return i.param.name; });

}  // namespace
