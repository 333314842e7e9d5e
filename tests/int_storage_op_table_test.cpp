// TF's narrow and unsigned integers through every op of the op table, by the one storage rule
// (src/ops/bfloat16_dispatch.cpp): an op fed int8 (or uint16, or uint32) gives what it gives on
// the same values in int32 (int64 for uint32), its results of that dtype cast back (wrapping),
// its other results (indices, comparisons) unchanged; an op that refuses int32 refuses the
// narrow dtype with an ef::Error too (no crash); a traced call equals the eager one.
#include <cstring>
#include <string>

#include "op_table.h"

using namespace ef;
using ef::testing::OpInfo;

namespace {

std::vector<OpInfo> floating_ops() {
  std::vector<OpInfo> out;
  for (auto& op : ef::testing::op_table()) {
    bool floating = false;
    for (const auto& in : op.inputs) floating |= in.dtype == DType::float64;
    if (floating && !op.writes_variables) out.push_back(op);
  }
  return out;
}

std::vector<std::uint8_t> bytes_of(const Tensor& t) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(t.num_elements()) * size_of(t.dtype()));
  if (!out.empty()) std::memcpy(out.data(), t.raw_data(), out.size());
  return out;
}

// The entry's inputs with the floating ones as whole numbers (small enough for int8), in
// `wide`; `unsigned_values` keeps them non-negative (uint16 and uint32 hold them as they are).
std::vector<Tensor> whole_inputs(const OpInfo& op, DType wide, bool unsigned_values) {
  std::vector<Tensor> xs = ef::testing::make_inputs(op, DType::float64, 9);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (op.inputs[i].dtype != DType::float64) continue;
    Tensor r = round(xs[i] * 20.0);
    if (unsigned_values) r = abs(r);
    xs[i] = cast(r, wide);
  }
  return xs;
}

struct Case {
  DType storage, wide;
  bool unsigned_values;
};
constexpr Case kCases[] = {{DType::int8, DType::int32, false}, {DType::uint16, DType::int32, true},
                           {DType::uint32, DType::int64, true}};

class IntStorageOpTable : public ::testing::TestWithParam<OpInfo> {};

TEST_P(IntStorageOpTable, ComputesInTheWideDtypeAndWrapsBack) {
  const OpInfo& op = GetParam();
  // Its entry draws in its input's dtype, and TF's poisson draws no 8- or 16-bit integers
  // either: the refusal is the behaviour (random_extra_test checks it).
  if (op.name == "random_poisson") return;
  for (const Case& c : kCases) {
    std::vector<Tensor> wide = whole_inputs(op, c.wide, c.unsigned_values), low;
    for (std::size_t i = 0; i < wide.size(); ++i)  // (the table's own int64 indices stay int64)
      low.push_back(op.inputs[i].dtype == DType::float64 ? cast(wide[i], c.storage) : wide[i]);
    Tensor want;
    try {
      want = op.fn(wide);
    } catch (const Error&) {
      // The op refuses integers: so it refuses the storage dtype, with an ef::Error.
      EXPECT_THROW(op.fn(low), Error) << op.name << " " << name_of(c.storage);
      continue;
    }
    if (!want.defined()) {  // a gradient with respect to integers: none (TF's None), in any integer dtype
      EXPECT_FALSE(op.fn(low).defined()) << op.name << " " << name_of(c.storage);
      continue;
    }
    Tensor got;
    try {
      got = op.fn(low);
    } catch (const Error& e) {
      ADD_FAILURE() << op.name << " " << name_of(c.storage) << ": " << e.what();
      continue;
    }
    if (bytes_of(op.fn(wide)) != bytes_of(want)) continue;  // a random draw
    // Data results come back in the storage dtype; indices, counts and comparisons keep their
    // dtype (argmax's int64 stays int64 for uint32, which computes in int64 too).
    bool data = want.dtype() == c.wide && (got.dtype() == c.storage || c.wide == DType::int32);
    Tensor expected = data ? cast(want, c.storage) : want;
    ASSERT_EQ(got.spec(), expected.spec()) << op.name << " " << name_of(c.storage);
    EXPECT_EQ(bytes_of(got), bytes_of(expected)) << op.name << " " << name_of(c.storage);
    auto f = function([&](const std::vector<Tensor>& xs) { return op.fn(xs); });
    Tensor traced = f(low);
    ASSERT_EQ(traced.spec(), got.spec()) << op.name << " " << name_of(c.storage);
    EXPECT_EQ(bytes_of(traced), bytes_of(got)) << op.name << " " << name_of(c.storage);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, IntStorageOpTable, ::testing::ValuesIn(floating_ops()),
                         [](const ::testing::TestParamInfo<OpInfo>& i) { return i.param.name; });

}  // namespace
