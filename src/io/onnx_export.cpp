// ef graphs -> ONNX ModelProto. Each ef op maps to one ONNX op or a short fixed pattern; the
// official checker validates the result.
#include "eagerflow/saving/onnx.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <functional>
#include <map>

#include "eagerflow/core/error.h"
#include "eagerflow/io/safetensors.h"
#include "eagerflow/saving/saved_model.h"
#include "eagerflow/ops/ops.h"
#include "autodiff/custom_gradient_op.h"
#include "function/scan_op.h"
#include "eagerflow/passes/passes.h"
#include "ops/attention_op.h"
#include "ops/layer_norm_op.h"
#include "ops/softmax_cross_entropy_op.h"
#include "ops/primitives.h"
#include "ops/rnn_op.h"
#include "ops/sequence_primitives.h"

namespace ef::onnx {
namespace {

namespace pb = ::onnx;

int onnx_dtype(DType t) {
  switch (t) {
    case DType::float32: return pb::TensorProto_DataType_FLOAT;
    case DType::float64: return pb::TensorProto_DataType_DOUBLE;
    case DType::int32: return pb::TensorProto_DataType_INT32;
    case DType::int64: return pb::TensorProto_DataType_INT64;
    case DType::bool_: return pb::TensorProto_DataType_BOOL;
    case DType::bfloat16: return pb::TensorProto_DataType_BFLOAT16;
  }
  return 0;
}

class Exporter {
 public:
  Exporter(const ir::Graph& g, pb::GraphProto& out) : g_(g), out_(out) {}
  // A sub-graph (ef::scan's body): its names start with `prefix`, unique in the model.
  Exporter(const ir::Graph& g, pb::GraphProto& out, std::string prefix) : g_(g), out_(out), prefix_(std::move(prefix)) {}

  // The body of an ONNX Scan: its first `n_inputs` inputs are the sub-graph's (state, then
  // scan input elements); the rest are captures, read by name from the enclosing graph.
  void run_subgraph(std::size_t n_inputs, const std::vector<std::string>& outer) {
    for (std::size_t i = 0; i < g_.inputs.size(); ++i) {
      int v = g_.inputs[i];
      if (i >= n_inputs) {
        names_[v] = outer.at(i - n_inputs);
        continue;
      }
      names_[v] = fresh("in");
      value_info(*out_.add_input(), names_[v], g_.values[static_cast<std::size_t>(v)].spec);
    }
    for (std::size_t v = 0; v < g_.values.size(); ++v)
      if (g_.values[v].kind == ir::ValueKind::constant)
        names_[static_cast<int>(v)] = initializer(fresh("const"), g_.constants[static_cast<std::size_t>(g_.values[v].index)]);
    for (const ir::Node& node : g_.nodes) emit(node);
    for (int o : g_.outputs) {
      std::string name = fresh("out");
      node("Identity", {name_of_value(o)}, {name});
      value_info(*out_.add_output(), name, g_.values[static_cast<std::size_t>(o)].spec);
    }
  }

  void run() {
    for (std::size_t i = 0; i < g_.inputs.size(); ++i) {
      int v = g_.inputs[i];
      std::string name = g_.inputs.size() == 1 ? "inputs" : "input_" + std::to_string(i);
      names_[v] = name;
      value_info(*out_.add_input(), name, g_.values[static_cast<std::size_t>(v)].spec);
    }
    for (std::size_t v = 0; v < g_.values.size(); ++v)
      if (g_.values[v].kind == ir::ValueKind::constant)
        names_[static_cast<int>(v)] = initializer("const_" + std::to_string(v), g_.constants[static_cast<std::size_t>(g_.values[v].index)]);
    for (const ir::Node& node : g_.nodes) emit(node);
    for (std::size_t i = 0; i < g_.outputs.size(); ++i) {
      std::string name = "output_" + std::to_string(i);
      node("Identity", {name_of_value(g_.outputs[i])}, {name});
      value_info(*out_.add_output(), name, g_.values[static_cast<std::size_t>(g_.outputs[i])].spec);
    }
  }

 private:
  void value_info(pb::ValueInfoProto& vi, const std::string& name, const TensorSpec& spec) {
    vi.set_name(name);
    auto* t = vi.mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx_dtype(spec.dtype));
    auto* shape = t->mutable_shape();
    for (int d = 0; d < spec.shape.rank(); ++d) {
      auto* dim = shape->add_dim();
      if (spec.shape[d] == kDynamic) dim->set_dim_param(d == 0 ? "batch" : "dim_" + std::to_string(d));
      else dim->set_dim_value(spec.shape[d]);
    }
  }

  std::string fresh(const std::string& hint) { return prefix_ + hint + "_" + std::to_string(counter_++); }

  std::string initializer(const std::string& name, const Tensor& value) {
    Tensor t = value.clone();
    auto* init = out_.add_initializer();
    init->set_name(name);
    init->set_data_type(onnx_dtype(t.dtype()));
    for (int d = 0; d < t.rank(); ++d) init->add_dims(t.shape()[d]);
    init->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
    return name;
  }
  std::string ints_initializer(const std::vector<std::int64_t>& v) {
    return initializer(fresh("ints"), tensor(v, Shape{static_cast<std::int64_t>(v.size())}));
  }

  pb::NodeProto& node(const std::string& type, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    pb::NodeProto& n = *out_.add_node();
    n.set_op_type(type);
    n.set_name(fresh(type));
    for (const auto& s : in) n.add_input(s);
    for (const auto& s : out) n.add_output(s);
    return n;
  }
  static void attr_int(pb::NodeProto& n, const std::string& name, std::int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto_AttributeType_INT);
    a->set_i(v);
  }
  static void attr_ints(pb::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto_AttributeType_INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void attr_string(pb::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto_AttributeType_STRING);
    a->set_s(v);
  }
  static void attr_tensor(pb::NodeProto& n, const std::string& name, const Tensor& t) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto_AttributeType_TENSOR);
    auto* tp = a->mutable_t();
    tp->set_data_type(onnx_dtype(t.dtype()));
    for (int d = 0; d < t.rank(); ++d) tp->add_dims(t.shape()[d]);
    tp->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
  }

  const std::string& name_of_value(int v) {
    auto it = names_.find(v);
    if (it == names_.end())
      fail(ErrorCode::internal, "onnx", "value " + std::to_string(v) + " is used before it is made");
    return it->second;
  }
  const TensorSpec& spec(int v) const { return g_.values[static_cast<std::size_t>(v)].spec; }

  [[noreturn]] void unsupported(const ir::Node& n, const std::string& why = "") {
    fail(ErrorCode::unimplemented, "onnx",
         std::string("op '") + n.op->name() + "' has no ONNX form" + (why.empty() ? "" : " (" + why + ")") +
             (n.scope.empty() ? "" : " [in layer " + n.scope + "]"));
  }

  // NHWC <-> NCHW around ONNX's channel-first convolution and pooling.
  std::string to_nchw(const std::string& x) {
    std::string out = fresh("nchw");
    attr_ints(node("Transpose", {x}, {out}), "perm", {0, 3, 1, 2});
    return out;
  }
  void from_nchw(const std::string& x, const std::string& out) { attr_ints(node("Transpose", {x}, {out}), "perm", {0, 2, 3, 1}); }

  // The fused LSTM / GRU (src/ops/rnn_op.h) as ONNX's LSTM / GRU (time-major, between transposes:
  // onnxruntime runs layout 0 only): weights
  // transposed to [1, gates * units, in] with the gates in ONNX's order (LSTM i, o, f, c from
  // Keras' i, f, c, o; GRU z, r, h as Keras), biases as [1, input bias ++ recurrent bias].
  void emit_rnn(const ir::Node& n, const RnnForward& r, const std::vector<std::string>& in) {
    bool lstm = r.cell() == RnnCellKind::lstm;
    std::int64_t u = spec(n.inputs[2]).shape[0];
    DType t = spec(n.inputs[0]).dtype;
    std::vector<std::int64_t> order;
    for (std::int64_t gate : lstm ? std::vector<std::int64_t>{0, 3, 1, 2} : std::vector<std::int64_t>{0, 1, 2})
      for (std::int64_t k = 0; k < u; ++k) order.push_back(gate * u + k);
    std::string idx = ints_initializer(order), zero_axis = ints_initializer({0});
    auto weights = [&](const std::string& w) {  // [in, g*u] -> [1, g*u (ONNX order), in]
      std::string tw = fresh("rnn_wt"), gw = fresh("rnn_w"), out = fresh("rnn_w");
      attr_ints(node("Transpose", {w}, {tw}), "perm", {1, 0});
      attr_int(node("Gather", {tw, idx}, {gw}), "axis", 0);
      node("Unsqueeze", {gw, zero_axis}, {out});
      return out;
    };
    std::string w = weights(in[1]), rk = weights(in[2]);
    // Bias rows (src/ops/rnn_op.h): LSTM i, f, c, o; GRU z, r (both biases summed), h input, h recurrent.
    std::string flat = fresh("rnn_b");
    node("Reshape", {in[3], ints_initializer({4 * u})}, {flat});
    std::string wb = fresh("rnn_wb"), rb = fresh("rnn_rb"), b = fresh("rnn_b"), b1 = fresh("rnn_b");
    if (lstm) {
      attr_int(node("Gather", {flat, idx}, {wb}), "axis", 0);
      rb = initializer(fresh("rnn_zeros"), zeros(Shape{4 * u}, t));
    } else {
      std::string zr = fresh("rnn_b"), zeros2 = initializer(fresh("rnn_zeros"), zeros(Shape{2 * u}, t));
      node("Slice", {flat, ints_initializer({0}), ints_initializer({3 * u}), ints_initializer({0})}, {wb});
      node("Slice", {flat, ints_initializer({3 * u}), ints_initializer({4 * u}), ints_initializer({0})}, {zr});
      attr_int(node("Concat", {zeros2, zr}, {rb}), "axis", 0);
    }
    attr_int(node("Concat", {wb, rb}, {b}), "axis", 0);
    node("Unsqueeze", {b, zero_axis}, {b1});
    auto state = [&](const std::string& s) {  // [batch, u] -> [1, batch, u]
      std::string out = fresh("rnn_state");
      node("Unsqueeze", {s, zero_axis}, {out});
      return out;
    };
    std::string x_tnc = fresh("rnn_x");
    attr_ints(node("Transpose", {in[0]}, {x_tnc}), "perm", {1, 0, 2});
    std::vector<std::string> inputs{x_tnc, w, rk, b1, "", state(in[4])};
    if (lstm) inputs.push_back(state(in[5]));
    std::string y = fresh("rnn_y"), yh = fresh("rnn_yh"), yc = fresh("rnn_yc");
    std::vector<std::string> outputs{y, yh};
    if (lstm) outputs.push_back(yc);
    pb::NodeProto& cell = node(lstm ? "LSTM" : "GRU", inputs, outputs);
    attr_int(cell, "hidden_size", u);
    if (r.reverse()) attr_string(cell, "direction", "reverse");
    if (!lstm) attr_int(cell, "linear_before_reset", 1);
    std::string seq_tnc = fresh("rnn_seq"), seq = fresh("rnn_seq"), h = fresh("rnn_h");
    node("Squeeze", {y, ints_initializer({1})}, {seq_tnc});  // [t, 1, batch, u] -> [t, batch, u]
    attr_ints(node("Transpose", {seq_tnc}, {seq}), "perm", {1, 0, 2});
    node("Squeeze", {yh, zero_axis}, {h});
    names_[n.outputs[0]] = seq;
    names_[n.outputs[1]] = h;
    if (lstm) {
      std::string c = fresh("rnn_c");
      node("Squeeze", {yc, zero_axis}, {c});
      names_[n.outputs[2]] = c;
    }
    // The workspace output feeds the gradient op only, which exported graphs do not hold.
  }

  // The fused attention (src/ops/attention_op.h) decomposed: softmax((scale q) k^T, masked) v with
  // masked probabilities zeroed, as the kernel computes it (dropout is training-only); its
  // logsumexp output as ReduceLogSumExp of the masked scores.
  void emit_attention(const ir::Node& n, const ScaledDotProductAttention& a, const std::vector<std::string>& in) {
    const AttentionParams& p = a.params();
    DType t = spec(n.inputs[0]).dtype;
    // [batch, seq, heads, dim] inputs to [batch, heads, seq, dim] (and the output back).
    auto heads_second = [&](const std::string& x) {
      if (!p.bshd) return x;
      std::string y = fresh("attn_bhsd");
      attr_ints(node("Transpose", {x}, {y}), "perm", {0, 2, 1, 3});
      return y;
    };
    std::string qs = fresh("attn_q"), kt = fresh("attn_kt"), s = fresh("attn_s");
    node("Mul", {heads_second(in[0]), initializer(fresh("attn_scale"), cast(scalar(p.scale), t))}, {qs});
    attr_ints(node("Transpose", {in[1]}, {kt}), "perm", p.bshd ? std::vector<std::int64_t>{0, 2, 3, 1} : std::vector<std::int64_t>{0, 1, 3, 2});
    node("MatMul", {qs, kt}, {s});
    std::string visible;
    if (p.has_mask) visible = in[3];
    if (p.causal) {
      std::int64_t sq = spec(n.inputs[0]).shape[p.bshd ? 1 : 2], sk = spec(n.inputs[1]).shape[p.bshd ? 1 : 2];
      if (sq == kDynamic || sk == kDynamic)
        fail(ErrorCode::unimplemented, "onnx",
             "causal attention exports with static sequence lengths only, got q " + spec(n.inputs[0]).str() + ", k " +
                 spec(n.inputs[1]).str());
      std::string c = initializer(fresh("attn_causal"),
                                  greater_equal(reshape(arange(sq), {sq, 1}), reshape(arange(sk), {1, sk})));
      if (visible.empty()) {
        visible = c;
      } else {
        std::string both = fresh("attn_visible");
        node("And", {visible, c}, {both});
        visible = both;
      }
    }
    std::string scores = s, probs = fresh("attn_p");
    if (!visible.empty()) {
      scores = fresh("attn_s");
      node("Where", {visible, s, initializer(fresh("attn_neg"), cast(scalar(-1e9), t))}, {scores});
      std::string p0 = fresh("attn_p");
      attr_int(node("Softmax", {scores}, {p0}), "axis", -1);
      node("Where", {visible, p0, initializer(fresh("attn_zero"), cast(scalar(0.0), t))}, {probs});
    } else {
      attr_int(node("Softmax", {scores}, {probs}), "axis", -1);
    }
    std::string out = fresh("attention"), lse = fresh("attention_lse");
    if (p.bshd) {
      std::string o = fresh("attn_o");
      node("MatMul", {probs, heads_second(in[2])}, {o});
      attr_ints(node("Transpose", {o}, {out}), "perm", {0, 2, 1, 3});
    } else {
      node("MatMul", {probs, in[2]}, {out});
    }
    pb::NodeProto& r = node("ReduceLogSumExp", {scores}, {lse});
    attr_ints(r, "axes", {-1});
    attr_int(r, "keepdims", 0);
    names_[n.outputs[0]] = out;
    names_[n.outputs[1]] = lse;
  }

  void emit(const ir::Node& n) {
    const Primitive& op = *n.op;
    std::vector<std::string> in;
    for (int v : n.inputs) in.push_back(name_of_value(v));
    std::string out = fresh(op.name());
    if (n.outputs.size() == 1) names_[n.outputs[0]] = out;
    auto simple = [&](const char* type) { node(type, in, {out}); };

    if (auto* sc = dynamic_cast<const ScanOp*>(&op)) return scan(n, *sc, in);
    if (auto* cg = dynamic_cast<const CustomGradientOp*>(&op)) {
      // The rule matters for training only: for inference the node passes its outputs on.
      for (std::size_t i = 0; i < n.outputs.size(); ++i) {
        std::string o = fresh("custom_gradient");
        node("Identity", {in.at(cg->num_inputs() + i)}, {o});
        names_[n.outputs[i]] = o;
      }
      return;
    }
    if (auto* r = dynamic_cast<const ReadVariable*>(&op)) {
      names_[n.outputs[0]] = initializer(r->variable()->name.empty() ? fresh("variable") : r->variable()->name, r->variable()->read());
      return;
    }
    if (auto* u = dynamic_cast<const Unary*>(&op)) {
      switch (u->kind()) {
        case UnaryKind::neg: return simple("Neg");
        case UnaryKind::abs: return simple("Abs");
        case UnaryKind::exp: return simple("Exp");
        case UnaryKind::log: return simple("Log");
        case UnaryKind::sqrt: return simple("Sqrt");
        case UnaryKind::rsqrt: {
          std::string s = fresh("sqrt");
          node("Sqrt", in, {s});
          node("Reciprocal", {s}, {out});
          return;
        }
        case UnaryKind::square: node("Mul", {in[0], in[0]}, {out}); return;
        case UnaryKind::relu: return simple("Relu");
        case UnaryKind::sigmoid: return simple("Sigmoid");
        case UnaryKind::tanh: return simple("Tanh");
        case UnaryKind::gelu: {  // x * 0.5 * (1 + erf(x / sqrt 2)): Gelu is an op only from opset 20
          DType t = spec(n.inputs[0]).dtype;
          std::string c = initializer(fresh("c"), cast(scalar(0.70710678118654752440), t));
          std::string half = initializer(fresh("half"), cast(scalar(0.5), t)), one = initializer(fresh("one"), cast(scalar(1.0), t));
          std::string a = fresh("g"), e = fresh("g"), p = fresh("g"), h = fresh("g");
          node("Mul", {in[0], c}, {a});
          node("Erf", {a}, {e});
          node("Add", {e, one}, {p});
          node("Mul", {in[0], half}, {h});
          node("Mul", {h, p}, {out});
          return;
        }
        case UnaryKind::erf: return simple("Erf");
        case UnaryKind::sin: return simple("Sin");
        case UnaryKind::cos: return simple("Cos");
        case UnaryKind::logical_not: return simple("Not");
      }
    }
    if (auto* b = dynamic_cast<const Binary*>(&op)) {
      switch (b->kind()) {
        case BinaryKind::add: return simple("Add");
        case BinaryKind::sub: return simple("Sub");
        case BinaryKind::mul: return simple("Mul");
        case BinaryKind::div: return simple("Div");
        case BinaryKind::pow: return simple("Pow");
        case BinaryKind::maximum: return simple("Max");
        case BinaryKind::minimum: return simple("Min");
        case BinaryKind::equal: return simple("Equal");
        case BinaryKind::not_equal: {
          std::string e = fresh("eq");
          node("Equal", in, {e});
          node("Not", {e}, {out});
          return;
        }
        case BinaryKind::less: return simple("Less");
        case BinaryKind::less_equal: return simple("LessOrEqual");
        case BinaryKind::greater: return simple("Greater");
        case BinaryKind::greater_equal: return simple("GreaterOrEqual");
        case BinaryKind::logical_and: return simple("And");
        case BinaryKind::logical_or: return simple("Or");
      }
    }
    std::string name = op.name();
    if (dynamic_cast<const Where*>(&op)) return simple("Where");
    if (dynamic_cast<const Identity*>(&op)) return simple("Identity");
    if (dynamic_cast<const Cast*>(&op)) {
      attr_int(node("Cast", in, {out}), "to", onnx_dtype(spec(n.outputs[0]).dtype));
      return;
    }
    if (auto* r = dynamic_cast<const Reduce*>(&op)) {
      std::vector<bool> mask = r->reduced_mask(spec(n.inputs[0]).shape.rank());
      std::vector<std::int64_t> axes;
      for (std::size_t a = 0; a < mask.size(); ++a)
        if (mask[a]) axes.push_back(static_cast<std::int64_t>(a));
      bool keep = spec(n.outputs[0]).shape.rank() == spec(n.inputs[0]).shape.rank();
      if (axes.empty()) {  // nothing reduced (rank 0): the value itself
        node("Identity", in, {out});
        return;
      }
      if (r->kind() == ReduceKind::sum) {
        attr_int(node("ReduceSum", {in[0], ints_initializer(axes)}, {out}), "keepdims", keep);
      } else {
        ReduceKind k = r->kind();
        pb::NodeProto& nd = node(k == ReduceKind::mean ? "ReduceMean" : k == ReduceKind::max ? "ReduceMax" : "ReduceMin", in, {out});
        attr_ints(nd, "axes", axes);
        attr_int(nd, "keepdims", keep);
      }
      return;
    }
    if (auto* am = dynamic_cast<const ArgMax*>(&op)) {
      int rank = spec(n.inputs[0]).shape.rank();
      pb::NodeProto& nd = node("ArgMax", in, {out});
      attr_int(nd, "axis", am->axis() < 0 ? am->axis() + rank : am->axis());
      attr_int(nd, "keepdims", am->keepdims());
      return;
    }
    if (auto* sm = dynamic_cast<const Softmax*>(&op)) {
      attr_int(node(sm->log() ? "LogSoftmax" : "Softmax", in, {out}), "axis", sm->axis());
      return;
    }
    if (auto* m = dynamic_cast<const MatMul*>(&op)) {
      std::string a = in[0], b = in[1];
      auto transpose_last = [&](const std::string& x, int rank) {
        std::vector<std::int64_t> perm;
        for (int i = 0; i < rank; ++i) perm.push_back(i);
        std::swap(perm[static_cast<std::size_t>(rank - 1)], perm[static_cast<std::size_t>(rank - 2)]);
        std::string t = fresh("t");
        attr_ints(node("Transpose", {x}, {t}), "perm", perm);
        return t;
      };
      if (m->transpose_a()) a = transpose_last(a, spec(n.inputs[0]).shape.rank());
      if (m->transpose_b()) b = transpose_last(b, spec(n.inputs[1]).shape.rank());
      node("MatMul", {a, b}, {out});
      return;
    }
    if (dynamic_cast<const Reshape*>(&op)) {
      std::vector<std::int64_t> dims = spec(n.outputs[0]).shape.dims();
      for (auto& d : dims) if (d == kDynamic) d = -1;
      // A target with one unknown dim: -1 (ONNX infers it); zeros stay zeros (allowzero).
      int unknown = 0;
      for (auto d : dims) unknown += d == -1;
      if (unknown > 1) unsupported(n, "more than one dynamic dim in the target");
      pb::NodeProto& nd = node("Reshape", {in[0], ints_initializer(dims)}, {out});
      attr_int(nd, "allowzero", 1);
      return;
    }
    if (dynamic_cast<const ReshapeLike*>(&op)) {
      std::string s = fresh("shape");
      node("Shape", {in[1]}, {s});
      node("Reshape", {in[0], s}, {out});
      return;
    }
    if (auto* e = dynamic_cast<const ExpandDims*>(&op)) {
      int rank = spec(n.outputs[0]).shape.rank();
      node("Unsqueeze", {in[0], ints_initializer({e->axis() < 0 ? e->axis() + rank : e->axis()})}, {out});
      return;
    }
    if (auto* q = dynamic_cast<const Squeeze*>(&op)) {
      const Shape& sh = spec(n.inputs[0]).shape;
      std::vector<std::int64_t> axes(q->axes().begin(), q->axes().end());
      if (axes.empty())  // every size-1 axis
        for (int a = 0; a < sh.rank(); ++a)
          if (sh[a] == 1) axes.push_back(a);
      for (auto& a : axes) a = a < 0 ? a + sh.rank() : a;
      node("Squeeze", {in[0], ints_initializer(axes)}, {out});
      return;
    }
    if (auto* t = dynamic_cast<const Transpose*>(&op)) {
      int rank = spec(n.inputs[0]).shape.rank();
      std::vector<std::int64_t> perm;
      for (int a : t->perm()) perm.push_back(a < 0 ? a + rank : a);
      if (perm.empty())  // the default: reversed axes
        for (int a = rank - 1; a >= 0; --a) perm.push_back(a);
      attr_ints(node("Transpose", in, {out}), "perm", perm);
      return;
    }
    if (auto* c = dynamic_cast<const Concat*>(&op)) {
      int rank = spec(n.outputs[0]).shape.rank();
      attr_int(node("Concat", in, {out}), "axis", c->axis() < 0 ? c->axis() + rank : c->axis());
      return;
    }
    if (auto* g = dynamic_cast<const Gather*>(&op)) {
      attr_int(node("Gather", in, {out}), "axis", g->axis());
      return;
    }
    if (name == "shape") return simple("Shape");
    if (name == "size") return simple("Size");
    if (auto* f = dynamic_cast<const FillLike*>(&op)) {
      std::string shape = fresh("shape");
      node("Shape", {in[0]}, {shape});
      DType t = spec(n.outputs[0]).dtype;
      attr_tensor(node("ConstantOfShape", {shape}, {out}), "value", cast(full({1}, f->value(), DType::float64), t));
      return;
    }
    if (name == "broadcast_like") {
      std::string s = fresh("shape");
      node("Shape", {in[1]}, {s});
      node("Expand", {in[0], s}, {out});
      return;
    }
    if (name == "broadcast_to") {
      std::vector<std::int64_t> dims = spec(n.outputs[0]).shape.dims();
      for (auto& d : dims) if (d == kDynamic) d = 1;  // 1 broadcasts: keeps the input's dim
      node("Expand", {in[0], ints_initializer(dims)}, {out});
      return;
    }
    if (auto* c = dynamic_cast<const Conv2D*>(&op)) {
      // x NHWC -> NCHW; w HWIO -> OIHW.
      std::string x = to_nchw(in[0]), w = fresh("w_oihw"), y = fresh("y_nchw");
      attr_ints(node("Transpose", {in[1]}, {w}), "perm", {3, 2, 0, 1});
      pb::NodeProto& conv = node("Conv", {x, w}, {y});
      const Conv2DParams& cp = c->params();
      attr_ints(conv, "strides", {cp.sh, cp.sw});
      attr_ints(conv, "dilations", {cp.dh, cp.dw});
      attr_string(conv, "auto_pad", cp.same ? "SAME_UPPER" : "VALID");
      from_nchw(y, out);
      return;
    }
    if (auto* r = dynamic_cast<const RnnForward*>(&op)) {
      emit_rnn(n, *r, in);
      return;
    }
    if (auto* a = dynamic_cast<const ScaledDotProductAttention*>(&op)) {
      emit_attention(n, *a, in);
      return;
    }
    if (dynamic_cast<const SparseSoftmaxCrossEntropy*>(&op)) {
      // -log_softmax(logits)[label] (LogSoftmax, GatherElements at the unsqueezed labels) and
      // the rows' ReduceLogSumExp.
      std::string logp = fresh("ce_logp"), at = fresh("ce_labels"), picked = fresh("ce_picked"), sq = fresh("ce_sq");
      std::string loss = fresh("ce_loss"), lse = fresh("ce_lse"), last = ints_initializer({-1});
      attr_int(node("LogSoftmax", {in[0]}, {logp}), "axis", -1);
      node("Unsqueeze", {in[1], last}, {at});
      attr_int(node("GatherElements", {logp, at}, {picked}), "axis", -1);
      node("Squeeze", {picked, last}, {sq});
      node("Neg", {sq}, {loss});
      pb::NodeProto& r = node("ReduceLogSumExp", {in[0]}, {lse});
      attr_ints(r, "axes", {-1});
      attr_int(r, "keepdims", 0);
      names_[n.outputs[0]] = loss;
      names_[n.outputs[1]] = lse;
      return;
    }
    if (auto* ln = dynamic_cast<const LayerNormOp*>(&op)) {
      // ONNX's LayerNormalization (opset 17) over the last axis. Its Mean and InvStdDev are
      // float32 only (stash_type), so a float64 graph exports y alone (mean and rstd feed only
      // the gradient op, which exported graphs do not hold).
      bool f32 = spec(n.inputs[0]).dtype == DType::float32;
      std::string mean = f32 ? fresh("ln_mean") : "", rstd = f32 ? fresh("ln_rstd") : "";
      pb::NodeProto& nd = node("LayerNormalization", in, f32 ? std::vector<std::string>{out, mean, rstd}
                                                              : std::vector<std::string>{out});
      attr_int(nd, "axis", -1);
      auto* e = nd.add_attribute();
      e->set_name("epsilon");
      e->set_type(pb::AttributeProto_AttributeType_FLOAT);
      e->set_f(static_cast<float>(ln->epsilon()));
      names_[n.outputs[0]] = out;
      if (f32) {
        names_[n.outputs[1]] = mean;
        names_[n.outputs[2]] = rstd;
      }
      return;
    }
    if (auto* p = dynamic_cast<const Pool2D*>(&op)) {
      std::string x = to_nchw(in[0]), y = fresh("y_nchw");
      bool is_max = p->params().max;
      pb::NodeProto& pool = node(is_max ? "MaxPool" : "AveragePool", {x}, {y});
      const Pool2DParams& pp = p->params();
      attr_ints(pool, "kernel_shape", {pp.kh, pp.kw});
      attr_ints(pool, "strides", {pp.sh, pp.sw});
      attr_string(pool, "auto_pad", pp.same ? "SAME_UPPER" : "VALID");
      if (!is_max) attr_int(pool, "count_include_pad", 0);  // TF's averages leave padding out
      from_nchw(y, out);
      return;
    }
    if (auto* sl = dynamic_cast<const Slice*>(&op)) {
      std::vector<std::int64_t> axes, steps = sl->strides();
      for (std::size_t a = 0; a < sl->begin().size(); ++a) axes.push_back(static_cast<std::int64_t>(a));
      while (steps.size() < sl->begin().size()) steps.push_back(1);
      node("Slice", {in[0], ints_initializer(sl->begin()), ints_initializer(sl->end()), ints_initializer(axes),
                     ints_initializer(steps)},
           {out});
      return;
    }
    if (auto* oh = dynamic_cast<const OneHot*>(&op)) {
      DType t = spec(n.outputs[0]).dtype;
      std::string d = initializer(fresh("depth"), scalar(oh->depth()));
      std::string values = initializer(fresh("values"), cast(tensor({0.0f, 1.0f}), t));
      attr_int(node("OneHot", {in[0], d, values}, {out}), "axis", -1);
      return;
    }
    if (emit_sequence_op(n, op, in, out)) return;
    unsupported(n);
  }

  // Issue 18's ops (src/ops/sequence_primitives.h); false when `op` is none of them.
  bool emit_sequence_op(const ir::Node& n, const Primitive& op, const std::vector<std::string>& in, const std::string& out) {
    const TensorSpec& x = spec(n.inputs[0]);
    auto axis_of = [&](int a) { return static_cast<std::int64_t>(a < 0 ? a + x.shape.rank() : a); };
    auto scalar_of = [&](double v, DType t) { return initializer(fresh("c"), cast(full(Shape{}, v, DType::float64), t)); };
    auto static_dim = [&](int a, const char* what) {
      std::int64_t d = x.shape[a];
      if (d == kDynamic) unsupported(n, std::string(what) + " over a dynamic dim");
      return d;
    };
    if (auto* t = dynamic_cast<const Tri*>(&op)) {
      attr_int(node("Trilu", {in[0], initializer(fresh("k"), scalar(t->k()))}, {out}), "upper", t->lower() ? 0 : 1);
      return true;
    }
    if (auto* r = dynamic_cast<const Rounding*>(&op)) {
      if (is_integer(x.dtype)) node("Identity", in, {out});
      else node(r->kind() == RoundKind::floor ? "Floor" : r->kind() == RoundKind::ceil ? "Ceil" : "Round", in, {out});
      return true;
    }
    if (auto* c = dynamic_cast<const Clip*>(&op)) {
      node("Clip", {in[0], scalar_of(c->lo(), x.dtype), scalar_of(c->hi(), x.dtype)}, {out});
      return true;
    }
    if (auto* r = dynamic_cast<const ReduceBool*>(&op)) {
      // bool -> int32, ReduceMax (any) / ReduceMin (all), -> bool.
      std::string b = in[0], i = fresh("i"), red = fresh("r");
      if (x.dtype != DType::bool_) {
        b = fresh("b");
        attr_int(node("Cast", in, {b}), "to", pb::TensorProto_DataType_BOOL);
      }
      attr_int(node("Cast", {b}, {i}), "to", pb::TensorProto_DataType_INT32);
      std::vector<bool> mask = r->reduced_mask(x.shape.rank());
      std::vector<std::int64_t> axes;
      for (std::size_t a = 0; a < mask.size(); ++a)
        if (mask[a]) axes.push_back(static_cast<std::int64_t>(a));
      if (axes.empty()) {
        node("Identity", {i}, {red});
      } else {
        pb::NodeProto& nd = node(r->any() ? "ReduceMax" : "ReduceMin", {i}, {red});
        attr_ints(nd, "axes", axes);
        attr_int(nd, "keepdims", spec(n.outputs[0]).shape.rank() == x.shape.rank());
      }
      attr_int(node("Cast", {red}, {out}), "to", pb::TensorProto_DataType_BOOL);
      return true;
    }
    if (auto* p = dynamic_cast<const Pad*>(&op)) {
      int rank = x.shape.rank();
      if (p->mode() == Pad::Mode::symmetric) {
        // ONNX's Pad has no symmetric mode: one Gather per padded axis with the index map.
        std::string cur = in[0];
        std::vector<int> axes;
        for (std::size_t a = 0; a < p->paddings().size() / 2; ++a)
          if (p->paddings()[2 * a] || p->paddings()[2 * a + 1]) axes.push_back(static_cast<int>(a));
        if (axes.empty()) {
          node("Identity", {cur}, {out});
          return true;
        }
        for (std::size_t i = 0; i < axes.size(); ++i) {
          int a = axes[i];
          static_dim(a, "symmetric padding");
          std::string next = i + 1 == axes.size() ? out : fresh("padded");
          attr_int(node("Gather", {cur, ints_initializer(*p->axis_map(x.shape, a))}, {next}), "axis", a);
          cur = next;
        }
        return true;
      }
      std::vector<std::int64_t> pads(static_cast<std::size_t>(2 * rank), 0);
      for (std::size_t a = 0; a < p->paddings().size() / 2; ++a) {
        pads[a] = p->paddings()[2 * a];
        pads[a + static_cast<std::size_t>(rank)] = p->paddings()[2 * a + 1];
      }
      std::vector<std::string> args{in[0], ints_initializer(pads)};
      if (p->mode() == Pad::Mode::constant) args.push_back(scalar_of(p->constant(), x.dtype));
      attr_string(node("Pad", args, {out}), "mode", p->mode() == Pad::Mode::constant ? "constant" : "reflect");
      return true;
    }
    if (auto* t = dynamic_cast<const Tile*>(&op)) {
      node("Tile", {in[0], ints_initializer(t->multiples())}, {out});
      return true;
    }
    if (auto* r = dynamic_cast<const Repeat*>(&op)) {
      // A Gather with the index map of the (static) axis.
      int a = static_cast<int>(axis_of(r->axis()));
      static_dim(a, "repeat");
      std::vector<std::int64_t> map;
      if (auto m = r->axis_map(x.shape, a)) map = *m;
      else
        for (std::int64_t i = 0; i < x.shape[a]; ++i) map.push_back(i);
      attr_int(node("Gather", {in[0], ints_initializer(map)}, {out}), "axis", a);
      return true;
    }
    if (auto* c = dynamic_cast<const Cumulative*>(&op)) {
      if (c->product()) unsupported(n, "ONNX has no cumulative product");
      pb::NodeProto& nd = node("CumSum", {in[0], initializer(fresh("axis"), scalar(axis_of(c->axis())))}, {out});
      attr_int(nd, "exclusive", c->exclusive());
      attr_int(nd, "reverse", c->reverse());
      return true;
    }
    auto topk = [&](int a, std::int64_t k, bool largest, const std::string& values, const std::string& indices) {
      pb::NodeProto& nd = node("TopK", {in[0], ints_initializer({k})}, {values, indices});
      attr_int(nd, "axis", a);
      attr_int(nd, "largest", largest);
      attr_int(nd, "sorted", 1);
    };
    // ONNX's TopK puts equal values lower index first: the stable order, either direction.
    if (auto* s = dynamic_cast<const Sort*>(&op)) {
      int a = static_cast<int>(axis_of(s->axis()));
      topk(a, static_dim(a, "sort"), s->descending(), out, fresh("unused"));
      return true;
    }
    if (auto* s = dynamic_cast<const ArgSort*>(&op)) {
      int a = static_cast<int>(axis_of(s->axis()));
      topk(a, static_dim(a, "argsort"), s->descending(), fresh("unused"), out);
      return true;
    }
    if (auto* t = dynamic_cast<const TopK*>(&op)) {
      std::string values = fresh("values"), indices = fresh("indices64"), i32 = fresh("indices");
      topk(x.shape.rank() - 1, t->k(), true, values, indices);
      attr_int(node("Cast", {indices}, {i32}), "to", pb::TensorProto_DataType_INT32);
      names_[n.outputs[0]] = values;
      names_[n.outputs[1]] = i32;
      return true;
    }
    if (auto* t = dynamic_cast<const TakeAlongAxis*>(&op)) {
      attr_int(node("GatherElements", in, {out}), "axis", axis_of(t->axis()));
      return true;
    }
    if (auto* s = dynamic_cast<const ScatterAlongAxis*>(&op)) {
      const TensorSpec& like = spec(n.inputs[2]);
      std::string shape = fresh("shape"), zero = fresh("zeros");
      node("Shape", {in[2]}, {shape});
      attr_tensor(node("ConstantOfShape", {shape}, {zero}), "value", cast(full({1}, 0.0, DType::float64), like.dtype));
      int a = s->axis() < 0 ? s->axis() + like.shape.rank() : s->axis();
      pb::NodeProto& nd = node("ScatterElements", {zero, in[1], in[0]}, {out});
      attr_int(nd, "axis", a);
      attr_string(nd, "reduction", "add");
      return true;
    }
    return false;
  }

  // ef::scan as ONNX's Scan: the body a sub-graph (captures read from this graph by name);
  // reverse steps and stacks both ways from the end, so ys stay in xs' order.
  void scan(const ir::Node& n, const ScanOp& s, const std::vector<std::string>& in) {
    const std::size_t nc = s.num_carries(), nx = s.num_xs();
    if (nx == 0) unsupported(n, "a scan without xs: ONNX's Scan steps over its scan inputs");
    std::vector<std::string> outs;
    for (int v : n.outputs) outs.push_back(names_[v] = fresh("scan"));
    pb::NodeProto& nd = node("Scan", std::vector<std::string>(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(nc + nx)), outs);
    auto* a = nd.add_attribute();
    a->set_name("body");
    a->set_type(pb::AttributeProto_AttributeType_GRAPH);
    pb::GraphProto& body = *a->mutable_g();
    std::string prefix = fresh("body") + "/";
    body.set_name(prefix);
    std::shared_ptr<ir::Graph> flat = passes::inline_calls(*s.body().traced);
    Exporter(*flat, body, prefix).run_subgraph(nc + nx, std::vector<std::string>(in.begin() + static_cast<std::ptrdiff_t>(nc + nx), in.end()));
    attr_int(nd, "num_scan_inputs", static_cast<std::int64_t>(nx));
    if (s.reverse()) {
      attr_ints(nd, "scan_input_directions", std::vector<std::int64_t>(nx, 1));
      attr_ints(nd, "scan_output_directions", std::vector<std::int64_t>(n.outputs.size() - nc, 1));
    }
  }

  const ir::Graph& g_;
  pb::GraphProto& out_;
  std::string prefix_;
  std::map<int, std::string> names_;
  int counter_ = 0;
};

}  // namespace

void export_model(const ConcreteFunction& function, const std::string& path) {
  pb::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("eagerflow");
  model.set_producer_version("0.1.0");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  pb::GraphProto* graph = model.mutable_graph();
  graph->set_name(function.name().empty() ? "eagerflow" : function.name());
  // Calls (a loaded model inside the layer exported) are exported as the ops they call.
  std::shared_ptr<ir::Graph> flat = passes::inline_calls(function.traced_graph());
  Exporter(*flat, *graph).run();
  try {
    pb::checker::check_model(model);
  } catch (const std::exception& e) {
    fail(ErrorCode::internal, "onnx", std::string("the exported model fails the ONNX checker: ") + e.what());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) fail(ErrorCode::internal, "onnx", "cannot serialize the model");
  std::vector<std::byte> data(bytes.size());
  std::memcpy(data.data(), bytes.data(), bytes.size());
  io::write_file_atomically(path, data);
}

void export_model(nn::Layer& layer, const std::string& path, std::optional<TensorSpec> input_spec) {
  export_model(*inference_function(layer, input_spec), path);
}

}  // namespace ef::onnx
