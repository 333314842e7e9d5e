// Checked identities: check_numerics and class_indices (include/eagerflow/ops/checks.h).
#include "eagerflow/ops/checks.h"

#include <cmath>

#include "eagerflow/ops/ops.h"
#include "ops/primitives.h"
#include "ops/op_factories.h"

namespace ef {
namespace {


// Position i of a tensor as a multi-index ("(1, 4)"): what a user can look up.
std::string position(const Shape& shape, std::int64_t flat) {
  if (shape.rank() == 0) return "()";
  std::vector<std::int64_t> idx(static_cast<std::size_t>(shape.rank()));
  for (int a = shape.rank() - 1; a >= 0; --a) {
    std::int64_t d = shape[a] > 0 ? shape[a] : 1;
    idx[static_cast<std::size_t>(a)] = flat % d;
    flat /= d;
  }
  std::string s = "(";
  for (std::size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + (idx.size() == 1 ? ",)" : ")");
}

std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

// ---------------------------------------------------------------- check_numerics
OpParams CheckNumerics::parameters() const { return OpParams().add("message", message_); }

std::vector<TensorSpec> CheckNumerics::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (!is_floating(in[0].dtype())) fail(kWrongType, name(), "needs a floating tensor, got " + in[0].spec().str());
  return {in[0].spec()};
}

void CheckNumerics::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      auto d = in[0].data<T>();
      for (std::size_t i = 0; i < d.size(); ++i)
        if (!std::isfinite(d[i]))
          fail(message_.empty() ? name() : message_,
               std::string("found ") + (std::isnan(d[i]) ? "NaN" : "Inf") + " at position " +
                   position(in[0].shape(), static_cast<std::int64_t>(i)) + " of " + in[0].spec().str());
    }
  });
  out[0] = in[0];  // a checked input is its own output: no copy
}

std::vector<Tensor> CheckNumerics::vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> cot,
                                       const std::vector<bool>&) const {
  return {cot[0]};
}

Tensor check_numerics(const Tensor& x, const std::string& message) {
  if (!x.defined()) fail("check_numerics", "the tensor is undefined");
  return dispatch1(CheckNumerics(message), {x});
}

// ---------------------------------------------------------------- assert
OpParams Assert::parameters() const { return OpParams().add("message", message_).add("summarize", summarize_); }

std::vector<TensorSpec> Assert::infer(std::span<const Tensor> in) const {
  if (in.empty()) fail(name(), "needs a condition");
  if (in[0].dtype() != DType::bool_) fail(kWrongType, name(), "the condition must be bool, got " + in[0].spec().str());
  return {};
}

void Assert::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor>) const {
  for (bool ok : in[0].data<bool>())
    if (!ok) {
      // TF's text: the message, then each data tensor's first `summarize` values.
      std::string text = "assertion failed: " + (message_.empty() ? std::string() : message_ + " ");
      for (std::size_t i = 1; i < in.size(); ++i) {
        Tensor flat = reshape(in[i], {in[i].num_elements()});
        std::int64_t n = summarize_ < 0 ? flat.num_elements() : std::min(summarize_, flat.num_elements());
        text += (i > 1 ? " " : "") + format_values(slice(flat, {0}, {n}));
        if (n < flat.num_elements()) text.insert(text.size() - 1, "...");
      }
      fail(ErrorCode::invalid_argument, name(), text);
    }
}

void assert_that(const Tensor& condition, const std::vector<Tensor>& data, const std::string& message,
                 std::int64_t summarize) {
  if (!condition.defined()) fail("assert", "the condition is undefined");
  std::vector<Tensor> in{condition};
  in.insert(in.end(), data.begin(), data.end());
  dispatch(Assert(message, summarize), in);
}

// ---------------------------------------------------------------- class_indices
OpParams ClassIndices::parameters() const { return OpParams().add("classes", classes_).add("who", who_); }

std::vector<TensorSpec> ClassIndices::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (in[0].dtype() == DType::bool_)
    fail(kWrongType, who_, "labels must be class indices (integers), got " + in[0].spec().str());
  if (classes_ < 1) fail(who_, "needs at least one class, got " + std::to_string(classes_));
  return {{DType::int64, in[0].shape(), {}}};
}

void ClassIndices::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Tensor& labels = in[0];
  auto bad = [&](std::size_t i, const std::string& value, const std::string& why) {
    fail(who_, "Received a label value of " + value + " " + why + " (label at position " +
                   position(labels.shape(), static_cast<std::int64_t>(i)) + " of " + labels.spec().str() + ")");
  };
  auto range = "which is outside the valid range of [0, " + std::to_string(classes_) + ")";
  if (labels.dtype() == DType::int64) {  // already indices: checked, not copied
    auto d = labels.data<std::int64_t>();
    for (std::size_t i = 0; i < d.size(); ++i)
      if (d[i] < 0 || d[i] >= classes_) bad(i, std::to_string(d[i]), range);
    out[0] = labels;
    return;
  }
  out[0] = Tensor::empty(DType::int64, specs[0].shape);
  auto o = out[0].mutable_data<std::int64_t>();
  dispatch_dtype(labels.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      auto d = labels.data<T>();
      for (std::size_t i = 0; i < d.size(); ++i) {
        if constexpr (std::is_floating_point_v<T>) {
          double v = static_cast<double>(d[i]);
          if (!std::isfinite(v) || v != std::floor(v)) bad(i, number(v), "which is not a class index (a whole number)");
          if (v < 0 || v >= static_cast<double>(classes_)) bad(i, number(v), range);
          o[i] = static_cast<std::int64_t>(v);
        } else {
          std::int64_t v = d[i];
          if (v < 0 || v >= classes_) bad(i, std::to_string(v), range);
          o[i] = v;
        }
      }
    }
  });
}

Tensor class_indices(const Tensor& labels, std::int64_t num_classes, const std::string& who) {
  if (!labels.defined()) fail(who, "labels are undefined");
  return dispatch1(ClassIndices(num_classes, who), {labels});
}


void detail::add_check_factories(detail::OpFactories& f) {
  f["check_numerics"] = [](const OpParams& p) { return std::make_shared<CheckNumerics>(p.text("message")); };
  f["assert"] = [](const OpParams& p) { return std::make_shared<Assert>(p.text("message"), p.integer("summarize")); };
  f["class_indices"] = [](const OpParams& p) {
    std::int64_t classes = p.integer("classes");
    if (classes < 1) p.bad("class_indices needs at least one class");
    return std::make_shared<ClassIndices>(classes, p.text("who"));
  };
}

}  // namespace ef
