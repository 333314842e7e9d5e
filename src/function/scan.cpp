// ef::scan: eagerly a loop over the rows of xs; inside a trace one `scan` node whose body is
// a traced sub-graph, run once per step on views of the rows, its ys copied into the stacked
// outputs. Its gradient lives in scan_gradient.cpp.
//
// Why eagerly per step rather than trace-once-and-replay: eager code is where people debug,
// and there the body should behave as the same code written as a loop (host code, reading a
// value with item(), ef::print run at each step, a tape recording every op), as ef::while_loop
// and ef::cond do eagerly. Inside ef::function the one-node form gives the speed; tests check
// that both give the same numbers and gradients.
#include "eagerflow/function/scan.h"

#include <algorithm>
#include <cstring>

#include "eagerflow/function/function.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/trace/context.h"
#include "eagerflow/variable.h"
#include "eagerflow/ops/onnx_lowering.h"
#include "eagerflow/ops/op_rules.h"
#include "function/scan_op.h"
#include "ops/interpreters.h"
#include "trace/graph_edit.h"

namespace ef {
namespace {

std::string specs_str(const std::vector<TensorSpec>& specs) {
  std::string s = "(";
  for (std::size_t i = 0; i < specs.size(); ++i) s += (i ? ", " : "") + specs[i].str();
  return s + ")";
}

std::vector<TensorSpec> specs_of(std::span<const Tensor> ts) {
  std::vector<TensorSpec> s;
  for (const auto& t : ts) s.push_back(t.defined() ? t.spec() : TensorSpec{});
  return s;
}

TensorSpec row_spec(const TensorSpec& spec) {
  std::vector<std::int64_t> dims;
  for (int d = 1; d < spec.shape.rank(); ++d) dims.push_back(spec.shape[d]);
  return TensorSpec{spec.dtype, Shape(dims), {}};
}

TensorSpec stacked_spec(const TensorSpec& row, std::int64_t steps) {
  std::vector<std::int64_t> dims{steps};
  for (int d = 0; d < row.shape.rank(); ++d) dims.push_back(row.shape[d]);
  return TensorSpec{row.dtype, Shape(dims), {}};
}

bool compatible(const TensorSpec& given, const TensorSpec& wanted) {
  if (given.dtype != wanted.dtype || given.shape.rank() != wanted.shape.rank()) return false;
  for (int d = 0; d < given.shape.rank(); ++d)
    if (given.shape[d] != wanted.shape[d] && given.shape[d] != kDynamic && wanted.shape[d] != kDynamic) return false;
  return true;
}

// Row i of a concrete tensor as a view (rows of a row-major tensor are contiguous).
Tensor row_view(const Tensor& x, std::int64_t i) {
  const TensorImpl& src = x.impl();
  auto impl = new_tensor_impl();
  impl->dtype = src.dtype;
  std::vector<std::int64_t> dims;
  for (int d = 1; d < src.shape.rank(); ++d) dims.push_back(src.shape[d]);
  impl->shape = Shape(dims);
  impl->storage = src.storage;
  impl->offset = src.offset + static_cast<std::size_t>(i) * static_cast<std::size_t>(impl->shape.num_elements()) * size_of(src.dtype);
  return Tensor(std::move(impl));
}

// Row i as ops (recorded by tapes): the eager loop's x.
Tensor row_op(const Tensor& x, std::int64_t i) {
  std::vector<std::int64_t> dims;
  for (int d = 1; d < x.rank(); ++d) dims.push_back(x.shape()[d]);
  return reshape(slice(x, {i}, {i + 1}), Shape(dims));
}

// The number of steps from the xs' leading dims (kDynamic when none is known) and `length`.
std::int64_t steps_of(std::span<const Tensor> xs, std::optional<std::int64_t> length) {
  std::int64_t n = kDynamic;
  for (std::size_t j = 0; j < xs.size(); ++j) {
    if (xs[j].rank() < 1) fail("scan", "xs " + std::to_string(j) + " is a scalar " + xs[j].spec().str() + "; scan steps over the leading axis of each xs");
    std::int64_t d = xs[j].shape()[0];
    if (d == kDynamic) continue;
    if (n != kDynamic && d != n)
      fail("scan", "the xs disagree in their leading dim (the number of steps): " + specs_str(specs_of(xs)));
    n = d;
  }
  if (length) {
    if (*length < 0) fail("scan", "length must be >= 0, got " + std::to_string(*length));
    if (n != kDynamic && n != *length)
      fail("scan", "length is " + std::to_string(*length) + " but the xs have " + std::to_string(n) + " rows: " + specs_str(specs_of(xs)));
    n = *length;
  }
  return n;
}

// Traced, a dim the body leaves dynamic where the carry's is known (or the other way round) is
// checked at every step instead (ScanOp::eval).
void check_carry(const std::vector<Tensor>& init, const std::vector<Tensor>& carry, const std::string& where,
                 bool traced = false) {
  bool ok = init.size() == carry.size();
  for (std::size_t i = 0; ok && i < init.size(); ++i)
    ok = carry[i].defined() && carry[i].dtype() == init[i].dtype() &&
         (traced ? compatible(carry[i].spec(), init[i].spec()) : carry[i].shape() == init[i].shape());
  if (!ok)
    fail("scan", "the body must keep each carry's dtype and shape: " + where + " it returned carry " + specs_str(specs_of(carry)) +
                     " for carry " + specs_str(specs_of(init)));
}

void check_defined(const std::vector<Tensor>& ts, const char* what) {
  for (std::size_t i = 0; i < ts.size(); ++i)
    if (!ts[i].defined()) fail("scan", std::string(what) + " " + std::to_string(i) + " is undefined (default-constructed)");
}

std::string step_text(std::int64_t i, std::int64_t n) { return "step " + std::to_string(i) + " of " + std::to_string(n); }

// Traces the body once into a graph of its own: inputs (carries, x rows, captures), outputs
// (carries, ys). Variables it reads and never assigns are read outside, as captures, so that
// tapes see the reads and the variables get gradients.
struct TracedBody {
  std::shared_ptr<ir::Graph> graph;
  std::vector<Tensor> captures;
};

TracedBody trace_body(trace::TraceContext& outer, const ScanBody& f, const std::vector<Tensor>& init,
                      const std::vector<Tensor>& xs) {
  trace::TraceContext ctx(outer.function_name(), outer.allow_variable_creation(), &outer);
  {
    detail::SuspendTapes hide_tapes;  // the scan node is what a tape records
    trace::TraceScope scope(ctx);
    std::vector<Tensor> carry, x;
    for (const auto& c : init) carry.push_back(ctx.add_input(c.spec()));
    for (const auto& s : xs) x.push_back(ctx.add_input(row_spec(s.spec())));
    std::pair<std::vector<Tensor>, std::vector<Tensor>> r;
    try {
      r = f(carry, x);
    } catch (const Error& e) {
      fail(e.kind(), "scan",
           "tracing the body with carry " + specs_str(specs_of(carry)) + " and x " + specs_str(specs_of(x)) + ": " +
               e.what());
    }
    check_carry(carry, r.first, "traced,", /*traced=*/true);
    check_defined(r.second, "y");
    std::vector<Tensor> outs = r.first;
    outs.insert(outs.end(), r.second.begin(), r.second.end());
    ctx.set_outputs(outs);
  }
  std::vector<Tensor> captures = ctx.lifted();
  if (detail::tapes_recording()) {
    // Eager tensors the body captured are constants; a tape may watch them (a weight held
    // outside the trace): under a tape the floating ones become inputs, to get gradients.
    ir::Graph& g = *ctx.graph();
    for (const auto& [original, id] : ctx.captured_constants()) {
      if (!is_inexact(original.dtype())) continue;
      ir::Value& v = g.values[static_cast<std::size_t>(id)];
      v.kind = ir::ValueKind::input;
      v.index = static_cast<int>(g.inputs.size());
      g.inputs.push_back(id);
      captures.push_back(original);
    }
  }
  ir::HoistedReads hoisted = ir::hoist_variable_reads(*ctx.graph());
  TracedBody body{hoisted.graph, captures};
  for (const auto& var : hoisted.variables) body.captures.push_back(Variable::from_state(var).value());
  return body;
}

// Without a tape to record them, the steps keep nothing: x is a view of its row, and each
// step's ys are copied into the stacked outputs at once (a million scalar steps held each
// step's tensors, ~500 bytes apiece, until the end). Under a tape the steps run as ops
// (slices, a final stack) that the tape records and differentiates.
std::pair<std::vector<Tensor>, std::vector<Tensor>> eager_scan(const ScanBody& f, std::vector<Tensor> carry,
                                                               const std::vector<Tensor>& xs, std::int64_t n, bool reverse) {
  const std::vector<Tensor> init = carry;
  const bool taped = detail::tapes_recording();
  std::vector<std::vector<Tensor>> ys_at(taped ? static_cast<std::size_t>(n) : 0);
  std::vector<Tensor> stacked;
  std::vector<TensorSpec> y_specs;
  for (std::int64_t t = 0; t < n; ++t) {
    std::int64_t i = reverse ? n - 1 - t : t;
    std::vector<Tensor> x;
    for (const auto& s : xs) x.push_back(taped ? row_op(s, i) : row_view(s, i));
    std::pair<std::vector<Tensor>, std::vector<Tensor>> r;
    try {
      r = f(carry, x);
    } catch (const Error& e) {
      fail(e.kind(), "scan",
           step_text(i, n) + " (carry " + specs_str(specs_of(carry)) + ", x " + specs_str(specs_of(x)) +
               "): " + e.what());
    }
    check_carry(init, r.first, "at " + step_text(i, n));
    check_defined(r.second, "y");
    if (t == 0) {
      y_specs = specs_of(r.second);
      if (!taped)
        for (const auto& spec : y_specs) stacked.push_back(Tensor::empty(spec.dtype, stacked_spec(spec, n).shape));
    } else if (specs_of(r.second) != y_specs) {
      fail("scan", "the body's ys changed at " + step_text(i, n) + ": " + specs_str(specs_of(r.second)) + ", earlier " + specs_str(y_specs));
    }
    carry = std::move(r.first);
    if (taped) {
      ys_at[static_cast<std::size_t>(i)] = std::move(r.second);
      continue;
    }
    for (std::size_t k = 0; k < r.second.size(); ++k) {
      const Tensor& y = r.second[k];
      if (y.is_symbolic()) fail("scan", "the body returned a symbolic y outside of a trace");
      const std::size_t bytes = y.nbytes();
      if (bytes) std::memcpy(static_cast<std::byte*>(stacked[k].raw_mutable_data()) + static_cast<std::size_t>(i) * bytes, y.raw_data(), bytes);
    }
  }
  std::vector<Tensor> ys;
  if (n == 0) {
    // No step ran: the ys' specs come from tracing the body once.
    trace::TraceContext probe("scan", /*allow_variable_creation=*/false);
    TracedBody body = trace_body(probe, f, init, xs);
    for (std::size_t k = init.size(); k < body.graph->outputs.size(); ++k) {
      TensorSpec spec = stacked_spec(body.graph->values[static_cast<std::size_t>(body.graph->outputs[k])].spec, 0);
      Shape s = spec.shape;
      for (int d = 0; d < s.rank(); ++d)
        if (s[d] == kDynamic) s[d] = 0;
      ys.push_back(zeros(s, spec.dtype));
    }
    return {carry, ys};
  }
  if (!taped) return {carry, stacked};
  for (std::size_t k = 0; k < y_specs.size(); ++k) {
    std::vector<Tensor> rows;
    for (auto& step : ys_at) rows.push_back(step[k]);
    ys.push_back(stack(rows, 0));
  }
  return {carry, ys};
}

}  // namespace

ScanOp::ScanOp(SubGraph body, std::size_t n_carry, std::size_t n_xs, std::int64_t length, bool reverse)
    : body_(std::move(body)), n_carry_(n_carry), n_xs_(n_xs), n_ys_(body_.traced->outputs.size() - n_carry),
      length_(length), reverse_(reverse), effects_(body_.touches_state()) {}

std::string ScanOp::attrs() const {
  std::string s;
  if (length_ >= 0) s += "length=" + std::to_string(length_) + " ";
  if (reverse_) s += "reverse=True ";
  // The body's lines indented under the node's.
  std::string body = ir::to_text(*body_.graph);
  for (std::size_t at = body.find('\n'); at != std::string::npos; at = body.find('\n', at + 1)) body.insert(at + 1, "      ");
  return s + "carries=" + std::to_string(n_carry_) + " xs=" + std::to_string(n_xs_) + "\n      body=" + body;
}

std::vector<SubGraphRef> ScanOp::subgraphs() const {
  std::vector<SubGraphRef> refs;
  body_.add_refs(refs, "body");
  return refs;
}

std::vector<TensorSpec> ScanOp::infer(std::span<const Tensor> in) const {
  const ir::Graph& g = *body_.traced;
  if (in.size() != g.inputs.size())
    fail("scan", "expects " + std::to_string(g.inputs.size()) + " inputs (carries, xs, captures), got " + std::to_string(in.size()));
  auto wanted = [&](std::size_t i) { return g.values[static_cast<std::size_t>(g.inputs[i])].spec; };
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!in[i].defined()) fail("scan", "input " + std::to_string(i) + " is undefined");
    bool is_x = i >= n_carry_ && i < n_carry_ + n_xs_;
    if (is_x && in[i].rank() < 1) fail("scan", "xs " + std::to_string(i - n_carry_) + " is a scalar " + in[i].spec().str());
    TensorSpec given = is_x ? row_spec(in[i].spec()) : in[i].spec();
    if (!compatible(given, wanted(i)))
      fail("scan", std::string(i < n_carry_ ? "carry " : is_x ? "a row of xs " : "capture ") +
                       std::to_string(i < n_carry_ ? i : is_x ? i - n_carry_ : i - n_carry_ - n_xs_) + " is " + given.str() +
                       " but the body was traced for " + wanted(i).str());
  }
  std::int64_t n = steps_of(in.subspan(n_carry_, n_xs_), length_ >= 0 ? std::optional(length_) : std::nullopt);
  std::vector<TensorSpec> specs;
  for (std::size_t i = 0; i < n_carry_; ++i) specs.push_back(in[i].spec());
  for (std::size_t k = n_carry_; k < g.outputs.size(); ++k)
    specs.push_back(stacked_spec(g.values[static_cast<std::size_t>(g.outputs[k])].spec, n));
  return specs;
}

std::int64_t ScanOp::steps(std::span<const Tensor> in) const {
  return steps_of(in.subspan(n_carry_, n_xs_), length_ >= 0 ? std::optional(length_) : std::nullopt);
}

void ScanOp::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const std::int64_t n = steps(in);
  std::vector<Tensor> args(in.begin(), in.end());
  std::vector<Tensor> outs(body_.plan->num_outputs());
  std::vector<std::size_t> row_bytes(n_ys_, 0);
  std::vector<Shape> row_shapes(n_ys_);
  for (std::int64_t t = 0; t < n; ++t) {
    std::int64_t i = reverse_ ? n - 1 - t : t;
    for (std::size_t j = 0; j < n_xs_; ++j) args[n_carry_ + j] = row_view(in[n_carry_ + j], i);
    try {
      body_.plan->run(args, outs);
    } catch (const Error& e) {
      fail(e.kind(), "scan",
           step_text(i, n) + " (carry " + specs_str(specs_of(std::span<const Tensor>(args).first(n_carry_))) +
               "): " + e.what());
    }
    for (std::size_t c = 0; c < n_carry_; ++c) {
      if (outs[c].shape() != args[c].shape())
        fail("scan", "the body must keep each carry's shape: at " + step_text(i, n) + " carry " + std::to_string(c) + " became " +
                         outs[c].spec().str() + " from " + args[c].spec().str());
      args[c] = std::move(outs[c]);
    }
    for (std::size_t k = 0; k < n_ys_; ++k) {
      const Tensor& y = outs[n_carry_ + k];
      Tensor& ys = out[n_carry_ + k];
      if (t == 0) {
        ys = Tensor::empty(y.dtype(), stacked_spec(y.spec(), n).shape);
        row_bytes[k] = y.nbytes();
        row_shapes[k] = y.shape();
      } else if (y.shape() != row_shapes[k]) {
        fail("scan", "y " + std::to_string(k) + " changed shape at " + step_text(i, n) + ": " + y.spec().str() + ", earlier " +
                         row_spec(ys.spec()).str());
      }
      if (row_bytes[k]) std::memcpy(static_cast<char*>(ys.raw_mutable_data()) + static_cast<std::size_t>(i) * row_bytes[k], y.raw_data(), row_bytes[k]);
    }
  }
  for (std::size_t c = 0; c < n_carry_; ++c) out[c] = args[c];
  if (n == 0)
    for (std::size_t k = 0; k < n_ys_; ++k) {
      Shape s = specs[n_carry_ + k].shape;
      for (int d = 0; d < s.rank(); ++d)
        if (s[d] == kDynamic) s[d] = 0;
      out[n_carry_ + k] = zeros(s, specs[n_carry_ + k].dtype);
    }
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> scan(const ScanBody& f, std::vector<Tensor> init, std::vector<Tensor> xs,
                                                         ScanOptions options) {
  if (!f) fail("scan", "the body is empty (a default std::function)");
  check_defined(init, "carry");
  check_defined(xs, "xs");
  if (xs.empty() && !options.length)
    fail("scan", "without xs the number of steps must be given (ScanOptions::length)");
  std::int64_t n = steps_of(xs, options.length);
  trace::TraceContext* outer = trace::current();
  if (!outer) return eager_scan(f, std::move(init), xs, n, options.reverse);

  // Inside a trace the loop becomes one node whose body is traced once.
  detail::NestedTrace nested("scan");
  TracedBody body = trace_body(*outer, f, init, xs);
  std::vector<Tensor> inputs = init;
  inputs.insert(inputs.end(), xs.begin(), xs.end());
  inputs.insert(inputs.end(), body.captures.begin(), body.captures.end());
  ScanOp op(SubGraph(body.graph, detail::tracing_pass_options()), init.size(), xs.size(), options.length.value_or(-1),
            options.reverse);
  // Under a tape, the variant that keeps what each step's gradient needs.
  std::optional<ScanOp> variant = detail::tapes_recording() ? op.with_residuals() : std::nullopt;
  std::vector<Tensor> out = dispatch(variant ? *variant : op, inputs);
  std::vector<Tensor> carry(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(init.size()));
  std::vector<Tensor> ys(out.begin() + static_cast<std::ptrdiff_t>(init.size()),
                         out.begin() + static_cast<std::ptrdiff_t>(init.size() + op.num_ys()));
  return {carry, ys};
}

namespace {

// ef::scan as ONNX's Scan: the body a sub-graph (captures read from the enclosing graph by
// name); reverse steps and stacks both ways from the end, so ys stay in xs' order.
void lower_scan(const ScanOp& s, onnx::Lowering& to) {
  const std::size_t nc = s.num_carries(), nx = s.num_xs();
  if (nx == 0) to.unsupported("a scan without xs: ONNX's Scan steps over its scan inputs");
  std::vector<std::string> in = to.inputs(), outs;
  for (std::size_t i = 0; i < to.num_outputs(); ++i) outs.push_back(to.output(i));
  auto own = static_cast<std::ptrdiff_t>(nc + nx);
  onnx::SubGraphAttribute body{s.body().traced, nc + nx, std::vector<std::string>(in.begin() + own, in.end())};
  std::vector<onnx::Attribute> attrs{{"body", std::move(body)}, {"num_scan_inputs", nx}};
  if (s.reverse()) {
    attrs.emplace_back("scan_input_directions", std::vector<std::int64_t>(nx, 1));
    attrs.emplace_back("scan_output_directions", std::vector<std::int64_t>(outs.size() - nc, 1));
  }
  to.node("Scan", std::vector<std::string>(in.begin(), in.begin() + own), outs, std::move(attrs));
}

const bool scan_rules_registered = register_op_rules<ScanOp>({
    .batching = [](const ScanOp& op, BatchingCall call) -> BatchingResult {
      return detail::scan_batching_rule(op, call.inputs, call.batch);
    },
    .onnx = lower_scan,
});

}  // namespace

}  // namespace ef
