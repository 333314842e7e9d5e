// The collectives: shape rules, kernels (on src/distributed/comm.h) and gradient rules.
#include "distributed/collectives.h"

#include <cstring>

#include "distributed/comm.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/train/distribution.h"
#include "ops/op_factories.h"
#include "eagerflow/ops/op_rules.h"

namespace ef::dist {
namespace {

const char* op_text(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::mean: return "mean";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

// What every rank says about its call: the op, its parameter, the dtype and the shape.
constexpr std::size_t kMaxDims = 12, kHeader = 4 + kMaxDims;
enum Code : std::int64_t { c_all_reduce = 1, c_broadcast, c_all_gather, c_reduce_scatter, c_reduce_to_root, c_barrier,
                           c_all_gather_rows, c_reduce_scatter_rows, c_bucket };

struct Call {
  Code code;
  std::int64_t param;
  const Tensor* x;  // null: no tensor (barrier), or `spec` below
  const TensorSpec* spec = nullptr;
};

const char* code_name(std::int64_t c) {
  switch (c) {
    case c_all_reduce: return "all_reduce";
    case c_broadcast: return "broadcast";
    case c_all_gather: return "all_gather";
    case c_reduce_scatter: return "reduce_scatter";
    case c_reduce_to_root: return "reduce_to_root";
    case c_barrier: return "barrier";
    case c_all_gather_rows: return "all_gather_rows";
    case c_reduce_scatter_rows: return "reduce_scatter_rows";
    case c_bucket: return "bucket_all_reduce";
  }
  return "an unknown collective";
}

std::string describe_header(const std::int64_t* h) {
  std::string s = code_name(h[0]);
  if (h[0] == c_all_reduce) s += std::string("(") + op_text(static_cast<ReduceOp>(h[1])) + ")";
  else if (h[0] == c_broadcast || h[0] == c_reduce_to_root) s += "(root=" + std::to_string(h[1]) + ")";
  else if (h[0] == c_all_gather || h[0] == c_reduce_scatter) s += "(axis=" + std::to_string(h[1]) + ")";
  else if (h[0] == c_bucket) s += "(" + std::to_string(h[1]) + " tensors)";
  if (h[0] == c_barrier) return s;
  if (h[2] < 0 || h[2] > static_cast<std::int64_t>(DType::bool_)) return s + " ?";
  s += " " + std::string(name_of(static_cast<DType>(h[2]))) + "[";
  for (std::int64_t a = 0; a < h[3] && a < static_cast<std::int64_t>(kMaxDims); ++a) s += (a ? "," : "") + std::to_string(h[4 + a]);
  if (h[3] > static_cast<std::int64_t>(kMaxDims)) s += ",...";
  return s + "]";
}

// The headers of every rank (rank r's at [r * kHeader]). Throws on every rank alike when the
// ranks disagree on the op, its parameter or the dtype, or on the dims other than
// `free_axis` (-1: all of them).
std::vector<std::int64_t> exchange(const char* name, const Call& call, int free_axis = -1) {
  std::vector<std::int64_t> mine(kHeader, 0);
  mine[0] = call.code;
  mine[1] = call.param;
  if (call.x || call.spec) {
    const TensorSpec s = call.x ? call.x->spec() : *call.spec;
    mine[2] = static_cast<std::int64_t>(s.dtype);
    mine[3] = s.shape.rank();
    for (int a = 0; a < s.shape.rank() && a < static_cast<int>(kMaxDims); ++a) mine[4 + static_cast<std::size_t>(a)] = s.shape[a];
  }
  std::vector<std::int64_t> all = comm::allgather_ints(mine);
  const std::size_t n = all.size() / kHeader;
  bool same = true;
  bool too_many_dims = false;
  for (std::size_t r = 0; r < n; ++r) {
    const std::int64_t* h = all.data() + r * kHeader;
    too_many_dims |= h[3] > static_cast<std::int64_t>(kMaxDims);
    for (std::size_t i = 0; i < kHeader; ++i)
      if (h[i] != all[i] && !(free_axis >= 0 && i == 4 + static_cast<std::size_t>(free_axis))) same = false;
  }
  if (!same) {
    std::string text = "the ranks disagree (every rank must call the same collective on the same dtype and shape): ";
    for (std::size_t r = 0; r < n && r < 8; ++r) text += (r ? ", " : "") + ("rank " + std::to_string(r) + " has ") + describe_header(all.data() + r * kHeader);
    if (n > 8) text += ", ...";
    fail(name, text);
  }
  if (too_many_dims)
    fail(name, "takes tensors of at most " + std::to_string(kMaxDims) + " dims, got " + (call.x ? call.x->spec() : *call.spec).str());
  return all;
}

void expect_defined(const Primitive& op, std::span<const Tensor> in, std::size_t n) {
  expect_inputs(op, in, n);
  for (const auto& t : in)
    if (!t.defined()) fail(op.name(), "an input tensor is undefined (default-constructed)");
}

void expect_reducible(const char* name, DType t, bool mean) {
  bool ok = t == DType::float32 || t == DType::float64 || t == DType::int32 || t == DType::int64;
  if (!ok || (mean && !is_floating(t)))
    fail(kWrongType, name,
         std::string("takes ") + (mean ? "float32 or float64" : "float32, float64, int32 or int64") + " tensors, got " +
             std::string(name_of(t)));
}

// x's dims with dim `axis` replaced.
Shape with_dim(const Shape& s, int axis, std::int64_t d) {
  std::vector<std::int64_t> dims = s.dims();
  dims[static_cast<std::size_t>(axis)] = d;
  return Shape(dims);
}

int checked_axis(const Primitive& op, const Tensor& x, int axis, bool strict) {
  int a = axis < 0 ? axis + x.rank() : axis;
  if (a < 0 || a >= x.rank()) {
    if (strict) fail(op.name(), "axis " + std::to_string(axis) + " is out of range for " + x.spec().str());
    return -1;
  }
  return a;
}

std::int64_t product(const Shape& s, int from, int to) {
  std::int64_t p = 1;
  for (int a = from; a < to; ++a) p *= s[a];
  return p;
}

void copy_tensor(const Tensor& from, Tensor& to) {
  if (from.nbytes()) std::memcpy(to.raw_mutable_data(), from.raw_data(), from.nbytes());
}

comm::Op to_comm(ReduceOp op) {
  return op == ReduceOp::max ? comm::Op::max : op == ReduceOp::min ? comm::Op::min : comm::Op::sum;
}

}  // namespace

// ---------------------------------------------------------------- all_reduce
OpParams AllReduce::parameters() const { return OpParams().add("op", Word{op_text(op_)}); }

std::vector<TensorSpec> AllReduce::infer(std::span<const Tensor> in) const {
  expect_defined(*this, in, 1);
  // The dtype is checked by the kernel, after the ranks agreed: a check here could fail on
  // one rank only and leave the others waiting.
  if (in[0].is_symbolic()) expect_reducible(name(), in[0].dtype(), op_ == ReduceOp::mean);
  return {in[0].spec()};
}

void AllReduce::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  exchange(name(), {c_all_reduce, static_cast<std::int64_t>(op_), &in[0]});
  expect_reducible(name(), in[0].dtype(), op_ == ReduceOp::mean);
  out[0] = Tensor::empty(in[0].dtype(), in[0].shape());
  if (in[0].num_elements())
    comm::allreduce(in[0].raw_data(), out[0].raw_mutable_data(), out[0].num_elements(), out[0].dtype(), to_comm(op_));
  if (op_ == ReduceOp::mean) {
    double w = comm::size();
    if (out[0].dtype() == DType::float32)
      for (float& v : out[0].mutable_data<float>()) v = static_cast<float>(v / w);
    else
      for (double& v : out[0].mutable_data<double>()) v /= w;
  }
}

std::vector<Tensor> AllReduce::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                   const std::vector<bool>&) const {
  if (op_ == ReduceOp::sum || op_ == ReduceOp::mean) return {all_reduce(cot[0], op_)};
  // max/min: the summed cotangent goes to the ranks holding the extremum, split among ties.
  Tensor holds = cast(equal(in[0], out[0]), in[0].dtype());
  return {all_reduce(cot[0], ReduceOp::sum) * holds / all_reduce(holds, ReduceOp::sum)};
}

// ---------------------------------------------------------------- broadcast
std::vector<TensorSpec> Broadcast::infer(std::span<const Tensor> in) const {
  expect_defined(*this, in, 1);
  return {in[0].spec()};
}

void Broadcast::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  exchange(name(), {c_broadcast, root_, &in[0]});
  int w = comm::size();
  if (root_ < 0 || root_ >= w)
    fail(name(), "root " + std::to_string(root_) + " is not a rank of this world of " + std::to_string(w));
  out[0] = Tensor::empty(in[0].dtype(), in[0].shape());
  if (comm::rank() == root_) copy_tensor(in[0], out[0]);
  if (out[0].nbytes()) comm::bcast(out[0].raw_mutable_data(), static_cast<std::int64_t>(out[0].nbytes()), root_);
}

std::vector<Tensor> Broadcast::vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> cot,
                                   const std::vector<bool>&) const {
  return {dispatch1(ReduceToRoot(root_), {cot[0]})};
}

std::vector<TensorSpec> ReduceToRoot::infer(std::span<const Tensor> in) const {
  expect_defined(*this, in, 1);
  if (in[0].is_symbolic()) expect_reducible(name(), in[0].dtype(), false);
  return {in[0].spec()};
}

void ReduceToRoot::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  exchange(name(), {c_reduce_to_root, root_, &in[0]});
  expect_reducible(name(), in[0].dtype(), false);
  int w = comm::size();
  if (root_ < 0 || root_ >= w)
    fail(name(), "root " + std::to_string(root_) + " is not a rank of this world of " + std::to_string(w));
  out[0] = Tensor::empty(in[0].dtype(), in[0].shape());
  if (out[0].nbytes()) std::memset(out[0].raw_mutable_data(), 0, out[0].nbytes());
  comm::reduce(in[0].num_elements() ? in[0].raw_data() : nullptr, out[0].num_elements() ? out[0].raw_mutable_data() : nullptr,
               in[0].num_elements(), in[0].dtype(), comm::Op::sum, root_);
  if (comm::rank() != root_ && out[0].nbytes()) std::memset(out[0].raw_mutable_data(), 0, out[0].nbytes());
}

std::vector<Tensor> ReduceToRoot::vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> cot,
                                      const std::vector<bool>&) const {
  return {broadcast(cot[0], root_)};
}

// ---------------------------------------------------------------- all_gather
std::vector<TensorSpec> AllGather::infer(std::span<const Tensor> in) const {
  expect_defined(*this, in, 1);
  const Tensor& x = in[0];
  if (rows_) {
    if (x.rank() < 1) {
      if (x.is_symbolic()) fail(name(), "needs a tensor with rows (rank >= 1), got " + x.spec().str());
      return {x.spec()};
    }
    return {{x.dtype(), with_dim(x.shape(), 0, kDynamic), {}}};
  }
  int a = checked_axis(*this, x, axis_, x.is_symbolic());
  if (a < 0) return {x.spec()};  // the kernel reports it, on every rank
  std::int64_t d = x.shape()[a];
  return {{x.dtype(), with_dim(x.shape(), a, d == kDynamic ? kDynamic : d * comm::size()), {}}};
}

void AllGather::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  const Tensor& x = in[0];
  const int w = comm::size();
  const std::size_t es = size_of(x.dtype());
  if (rows_) {
    std::vector<std::int64_t> headers = exchange(name(), {c_all_gather_rows, 0, &x}, 0);
    if (x.rank() < 1) fail(name(), "needs a tensor with rows (rank >= 1), got " + x.spec().str());
    const std::int64_t row_bytes = product(x.shape(), 1, x.rank()) * static_cast<std::int64_t>(es);
    std::vector<std::int64_t> bytes, displs;
    std::int64_t total = 0;
    for (int r = 0; r < w; ++r) {
      std::int64_t rows = headers[static_cast<std::size_t>(r) * kHeader + 4];
      displs.push_back(total * row_bytes);
      bytes.push_back(rows * row_bytes);
      total += rows;
    }
    out[0] = Tensor::empty(x.dtype(), with_dim(x.shape(), 0, total));
    comm::allgatherv(x.nbytes() ? x.raw_data() : nullptr, static_cast<std::int64_t>(x.nbytes()),
                     out[0].nbytes() ? out[0].raw_mutable_data() : nullptr, bytes, displs);
    return;
  }
  exchange(name(), {c_all_gather, axis_, &x});
  int a = checked_axis(*this, x, axis_, true);
  out[0] = Tensor::empty(x.dtype(), with_dim(x.shape(), a, x.shape()[a] * w));
  const std::int64_t nbytes = static_cast<std::int64_t>(x.nbytes());
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(w), nbytes), displs;
  for (int r = 0; r < w; ++r) displs.push_back(r * nbytes);
  if (a == 0) {
    comm::allgatherv(nbytes ? x.raw_data() : nullptr, nbytes, out[0].nbytes() ? out[0].raw_mutable_data() : nullptr, bytes, displs);
    return;
  }
  // Rank-major blocks, then interleaved along the axis.
  std::vector<char> all(static_cast<std::size_t>(nbytes * w));
  comm::allgatherv(nbytes ? x.raw_data() : nullptr, nbytes, all.data(), bytes, displs);
  const std::int64_t outer = product(x.shape(), 0, a);
  const std::int64_t inner = product(x.shape(), a, x.rank()) * static_cast<std::int64_t>(es);
  char* o = static_cast<char*>(out[0].nbytes() ? out[0].raw_mutable_data() : nullptr);
  for (std::int64_t i = 0; i < outer; ++i)
    for (int r = 0; r < w; ++r)
      std::memcpy(o + (i * w + r) * inner, all.data() + r * nbytes + i * inner, static_cast<std::size_t>(inner));
}

std::vector<Tensor> AllGather::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                   const std::vector<bool>&) const {
  if (rows_) return {dispatch1(ReduceScatter(0, true), {cot[0], in[0]})};
  return {reduce_scatter(cot[0], axis_)};
}

// ---------------------------------------------------------------- reduce_scatter
std::vector<TensorSpec> ReduceScatter::infer(std::span<const Tensor> in) const {
  expect_defined(*this, in, rows_ ? 2 : 1);
  const Tensor& x = in[0];
  if (x.is_symbolic()) expect_reducible(name(), x.dtype(), false);
  if (rows_) {
    const Tensor& like = in[1];
    if (x.rank() < 1 || like.rank() < 1) {
      if (x.is_symbolic()) fail(name(), "needs tensors with rows, got " + describe(in));
      return {x.spec()};
    }
    return {{x.dtype(), with_dim(x.shape(), 0, like.shape()[0]), {}}};
  }
  int a = checked_axis(*this, x, axis_, x.is_symbolic());
  if (a < 0) return {x.spec()};
  std::int64_t d = x.shape()[a], w = comm::size();
  if (d != kDynamic && d % w != 0) {
    if (x.is_symbolic())
      fail(name(), x.spec().str() + " has " + std::to_string(d) + " along axis " + std::to_string(axis_) +
                       ", which does not split into " + std::to_string(w) + " ranks");
    return {x.spec()};
  }
  return {{x.dtype(), with_dim(x.shape(), a, d == kDynamic ? kDynamic : d / w), {}}};
}

void ReduceScatter::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  const Tensor& x = in[0];
  const int w = comm::size();
  if (rows_) {
    // The header carries x's shape with like's row count in place of x's first dim.
    const Tensor& like = in[1];
    std::vector<std::int64_t> dims = x.shape().dims();
    if (!dims.empty() && like.rank() >= 1) dims[0] = like.dim(0);
    std::vector<std::int64_t> headers;
    std::vector<std::int64_t> mine(kHeader, 0);
    mine[0] = c_reduce_scatter_rows;
    mine[2] = static_cast<std::int64_t>(x.dtype());
    mine[3] = static_cast<std::int64_t>(dims.size());
    for (std::size_t a = 0; a < dims.size() && a < kMaxDims; ++a) mine[4 + a] = dims[a];
    headers = comm::allgather_ints(mine);
    bool same = true;
    for (int r = 0; r < w; ++r)
      for (std::size_t i = 0; i < kHeader; ++i)
        if (i != 4 && headers[static_cast<std::size_t>(r) * kHeader + i] != headers[i]) same = false;
    std::int64_t total = 0;
    for (int r = 0; r < w; ++r) total += headers[static_cast<std::size_t>(r) * kHeader + 4];
    if (!same || x.rank() < 1 || like.rank() < 1 || x.dim(0) != total) {
      std::string text = "the ranks disagree: ";
      for (int r = 0; r < w && r < 8; ++r) text += (r ? ", " : "") + ("rank " + std::to_string(r) + " has ") + describe_header(headers.data() + static_cast<std::size_t>(r) * kHeader);
      fail(name(), text + " (x " + x.spec().str() + " must hold every rank's rows)");
    }
    expect_reducible(name(), x.dtype(), false);
    const std::int64_t row = product(x.shape(), 1, x.rank());
    std::vector<std::int64_t> counts;
    for (int r = 0; r < w; ++r) counts.push_back(headers[static_cast<std::size_t>(r) * kHeader + 4] * row);
    out[0] = Tensor::empty(x.dtype(), with_dim(x.shape(), 0, like.dim(0)));
    comm::reduce_scatter(x.nbytes() ? x.raw_data() : nullptr, out[0].nbytes() ? out[0].raw_mutable_data() : nullptr, counts,
                         x.dtype(), comm::Op::sum);
    return;
  }
  exchange(name(), {c_reduce_scatter, axis_, &x});
  int a = checked_axis(*this, x, axis_, true);
  expect_reducible(name(), x.dtype(), false);
  std::int64_t d = x.shape()[a];
  if (d % w != 0)
    fail(name(), x.spec().str() + " has " + std::to_string(d) + " along axis " + std::to_string(axis_) +
                     ", which does not split into " + std::to_string(w) + " ranks");
  const std::int64_t k = d / w;
  out[0] = Tensor::empty(x.dtype(), with_dim(x.shape(), a, k));
  const std::int64_t block = out[0].num_elements();
  std::vector<std::int64_t> counts(static_cast<std::size_t>(w), block);
  if (a == 0 || x.num_elements() == 0) {
    comm::reduce_scatter(x.nbytes() ? x.raw_data() : nullptr, out[0].nbytes() ? out[0].raw_mutable_data() : nullptr, counts,
                         x.dtype(), comm::Op::sum);
    return;
  }
  // Rank r's block made contiguous, then reduced and scattered.
  const std::size_t es = size_of(x.dtype());
  const std::int64_t outer = product(x.shape(), 0, a);
  const std::int64_t inner = k * product(x.shape(), a + 1, x.rank()) * static_cast<std::int64_t>(es);
  std::vector<char> blocks(x.nbytes());
  const char* src = static_cast<const char*>(x.raw_data());
  for (int r = 0; r < w; ++r)
    for (std::int64_t i = 0; i < outer; ++i)
      std::memcpy(blocks.data() + (static_cast<std::int64_t>(r) * outer + i) * inner, src + (i * w + r) * inner,
                  static_cast<std::size_t>(inner));
  comm::reduce_scatter(blocks.data(), out[0].raw_mutable_data(), counts, x.dtype(), comm::Op::sum);
}

std::vector<Tensor> ReduceScatter::vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> cot,
                                       const std::vector<bool>& needed) const {
  if (rows_) return {all_gather_rows(cot[0]), Tensor()};
  return {all_gather(cot[0], axis_)};
}

// ---------------------------------------------------------------- bucket_all_reduce
std::vector<TensorSpec> BucketAllReduce::infer(std::span<const Tensor> in) const {
  if (in.empty()) fail(name(), "needs the tensors and the example count");
  for (const auto& t : in)
    if (!t.defined()) fail(name(), "an input tensor is undefined (default-constructed)");
  std::vector<TensorSpec> out;
  for (std::size_t i = 0; i + 1 < in.size(); ++i) {
    if (in[i].is_symbolic() && (!is_floating(in[i].dtype()) || in[i].dtype() != in[0].dtype()))
      fail(kWrongType, name(), "takes tensors of one floating dtype, got " + describe(in));
    out.push_back(in[i].spec());
  }
  return out;
}

namespace {
// vmap calls a collective once per example (every rank must); ONNX graphs run on one process.
template <class Op>
bool register_collective_rules() {
  return register_op_rules<Op>({.runs_per_example = true,
                                .onnx_unsupported = "a collective: ONNX graphs run on one process; export the model "
                                                    "outside data parallelism"});
}
const bool collective_rules_registered =
    register_collective_rules<AllReduce>() && register_collective_rules<Broadcast>() &&
    register_collective_rules<ReduceToRoot>() && register_collective_rules<AllGather>() &&
    register_collective_rules<ReduceScatter>() && register_collective_rules<BucketAllReduce>() &&
    register_collective_rules<Barrier>();
}  // namespace

namespace {
// The bucket as one vector: element 0 is the example count, then every tensor's elements in
// order. Calls f(i, j, at, m) for each piece of elements [first, first + n): m elements of
// tensor i from its element j, at offset `at` from `first` (i = -1: the count).
struct BucketLayout {
  std::vector<std::int64_t> start;  // tensor i's first element; start.back() = total + 1

  explicit BucketLayout(std::span<const Tensor> tensors) {
    start.push_back(1);
    for (const Tensor& t : tensors) start.push_back(start.back() + t.num_elements());
  }
  template <class F>
  void pieces(std::int64_t first, std::int64_t n, F&& f) const {
    std::int64_t at = first;
    const std::int64_t end = first + n;
    if (at == 0 && at < end) {
      f(-1, 0, 0, 1);
      ++at;
    }
    std::size_t i = 0;
    while (i + 1 < start.size() && start[i + 1] <= at) ++i;
    for (; at < end && i + 1 < start.size(); ++i) {
      const std::int64_t stop = std::min(end, start[i + 1]);
      if (stop > at) f(static_cast<std::ptrdiff_t>(i), at - start[i], at - first, stop - at);
      at = std::max(at, stop);
    }
  }
};

// sum_r(n_r * g_r) / sum_r(n_r), the sum in rank order (the same bits on every rank).
// Shared memory: each rank packs n * g straight into its segment of the window, and combines
// every rank's segments straight into its outputs (no copy through MPI, no buffer of ours).
// Otherwise: one buffer per thread, kept, and one MPI_Allreduce.
template <class T>
void bucket_kernel(std::span<const Tensor> in, std::span<Tensor> out, std::int64_t total) {
  const std::span<const Tensor> tensors = in.first(in.size() - 1);
  const double n = in.back().item<double>();
  const bool keep = n > 0;
  const T scale = keep ? static_cast<T>(n) : T(0);
  std::vector<const T*> src;
  std::vector<T*> dst;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    out[i] = Tensor::empty(tensors[i].dtype(), tensors[i].shape());
    const bool some = tensors[i].num_elements() > 0;
    src.push_back(some ? static_cast<const T*>(tensors[i].raw_data()) : nullptr);
    dst.push_back(some ? static_cast<T*>(out[i].raw_mutable_data()) : nullptr);
  }
  const BucketLayout layout(tensors);
  auto pack = [&](T* b, std::int64_t first, std::int64_t count) {
    layout.pieces(first, count, [&](std::ptrdiff_t i, std::int64_t j, std::int64_t at, std::int64_t m) {
      if (i < 0) b[at] = scale;
      else if (keep)
        for (std::int64_t q = 0; q < m; ++q) b[at + q] = src[static_cast<std::size_t>(i)][j + q] * scale;
      else
        std::fill(b + at, b + at + m, T(0));
    });
  };
  T inv = 0;
  if (comm::shared_memory_world()) {
    comm::shared_reduce(
        total + 1, sizeof(T), [&](void* mine, std::int64_t first, std::int64_t count) { pack(static_cast<T*>(mine), first, count); },
        [&](std::span<const void* const> all, std::int64_t first, std::int64_t count) {
          const T* a = static_cast<const T*>(all[0]);
          const T* b = all.size() > 1 ? static_cast<const T*>(all[1]) : nullptr;
          layout.pieces(first, count, [&](std::ptrdiff_t i, std::int64_t j, std::int64_t at, std::int64_t m) {
            if (i < 0) {
              T c = a[at];
              for (std::size_t r = 1; r < all.size(); ++r) c += static_cast<const T*>(all[r])[at];
              inv = T(1) / c;
              return;
            }
            T* o = dst[static_cast<std::size_t>(i)] + j;
            if (all.size() == 2) {
              for (std::int64_t q = 0; q < m; ++q) o[q] = (a[at + q] + b[at + q]) * inv;
              return;
            }
            std::copy(a + at, a + at + m, o);
            for (std::size_t r = 1; r < all.size(); ++r) {
              const T* c = static_cast<const T*>(all[r]) + at;
              for (std::int64_t q = 0; q < m; ++q) o[q] += c[q];
            }
            for (std::int64_t q = 0; q < m; ++q) o[q] *= inv;
          });
        });
    return;
  }
  thread_local std::vector<T> buffer;
  buffer.resize(static_cast<std::size_t>(total + 1));
  T* b = buffer.data();
  pack(b, 0, total + 1);
  comm::allreduce(b, total + 1, dtype_v<T>, comm::Op::sum);
  inv = T(1) / b[0];
  layout.pieces(1, total, [&](std::ptrdiff_t i, std::int64_t j, std::int64_t at, std::int64_t m) {
    T* o = dst[static_cast<std::size_t>(i)] + j;
    for (std::int64_t q = 0; q < m; ++q) o[q] = b[1 + at + q] * inv;
  });
}
}  // namespace

void BucketAllReduce::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  std::int64_t total = 0;
  bool same_dtype = true;
  for (std::size_t i = 0; i + 1 < in.size(); ++i) {
    total += in[i].num_elements();
    same_dtype &= in[i].dtype() == in[0].dtype();
  }
  const TensorSpec whole{in.size() > 1 ? in[0].dtype() : DType::float32, Shape{total}, {}};
  exchange(name(), {c_bucket, static_cast<std::int64_t>(in.size()) - 1, nullptr, &whole});
  if (!same_dtype || (in.size() > 1 && !is_floating(in[0].dtype())) || in.back().num_elements() != 1)
    fail(kWrongType, name(), "takes tensors of one floating dtype and a scalar count, got " + describe(in));
  if (in.size() == 1) {  // nothing to reduce but the count
    double n = in.back().item<double>();
    comm::allreduce(&n, 1, DType::float64, comm::Op::sum);
    return;
  }
  if (in[0].dtype() == DType::float32) bucket_kernel<float>(in, out, total);
  else bucket_kernel<double>(in, out, total);
}

// ---------------------------------------------------------------- barrier
std::vector<TensorSpec> Barrier::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 0);
  return {};
}

void Barrier::eval(std::span<const Tensor>, std::span<const TensorSpec>, std::span<Tensor>) const {
  exchange(name(), {c_barrier, 0, nullptr});  // an all-gather: nobody leaves before everyone came
}

// ---------------------------------------------------------------- the public functions
bool available() { return comm::built_with_mpi(); }
void init() { comm::ensure_init(); }
bool is_initialized() { return comm::initialized(); }
int rank() { return comm::rank(); }
int world_size() { return comm::size(); }
void use_shared_memory(bool on) { comm::set_shared_memory(on); }
bool shared_memory() { return comm::shared_memory_world(); }

void barrier() {
  comm::ensure_init();
  dispatch(Barrier(), {});
}

Tensor all_reduce(const Tensor& x, ReduceOp op) {
  comm::ensure_init();
  return dispatch1(AllReduce(op), {x});
}

Tensor broadcast(const Tensor& x, int root) {
  comm::ensure_init();
  return dispatch1(Broadcast(root), {x});
}

Tensor all_gather(const Tensor& x, int axis) {
  comm::ensure_init();
  return dispatch1(AllGather(axis, false), {x});
}

Tensor reduce_scatter(const Tensor& x, int axis) {
  comm::ensure_init();
  return dispatch1(ReduceScatter(axis, false), {x});
}

Tensor all_gather_rows(const Tensor& x) {
  comm::ensure_init();
  return dispatch1(AllGather(0, true), {x});
}

void abort_job(int code) { comm::abort_job(code); }

bool is_file_writer() { return !comm::initialized() || comm::size() == 1 || comm::rank() == 0; }

namespace {
// train and io ask train::is_file_writer (eagerflow/train/distribution.h), which knows no MPI.
[[maybe_unused]] const bool file_writer_rule_set = (train::set_file_writer_rule(&is_file_writer), true);
}  // namespace

}  // namespace ef::dist

namespace ef::detail {
void add_dist_factories(OpFactories& f) {
  using namespace ef::dist;
  f["all_reduce"] = [](const OpParams& p) {
    std::string op = p.word("op");
    ReduceOp k = op == "sum" ? ReduceOp::sum : op == "mean" ? ReduceOp::mean : op == "max" ? ReduceOp::max
               : op == "min" ? ReduceOp::min : (p.bad("op must be sum, mean, max or min, got '" + op + "'"), ReduceOp::sum);
    return std::make_shared<AllReduce>(k);
  };
  f["broadcast_from"] = [](const OpParams& p) { return std::make_shared<Broadcast>(static_cast<int>(p.integer("root"))); };
  f["reduce_to_root"] = [](const OpParams& p) { return std::make_shared<ReduceToRoot>(static_cast<int>(p.integer("root"))); };
  f["all_gather"] = [](const OpParams& p) { return std::make_shared<AllGather>(p.axis("axis"), false); };
  f["all_gather_rows"] = [](const OpParams&) { return std::make_shared<AllGather>(0, true); };
  f["reduce_scatter"] = [](const OpParams& p) { return std::make_shared<ReduceScatter>(p.axis("axis"), false); };
  f["reduce_scatter_rows"] = [](const OpParams&) { return std::make_shared<ReduceScatter>(0, true); };
  f["barrier"] = [](const OpParams&) { return std::make_shared<Barrier>(); };
  f["bucket_all_reduce"] = [](const OpParams&) { return std::make_shared<BucketAllReduce>(); };
}
}  // namespace ef::detail
