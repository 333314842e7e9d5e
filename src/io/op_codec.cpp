#include "io/op_codec.h"

#include <charconv>
#include <functional>
#include <map>

#include "autodiff/custom_gradient_op.h"
#include "eagerflow/core/error.h"
#include "ops/elementwise_math.h"
#include "ops/primitives.h"

namespace ef::io {
namespace {

// "key=value key=(1,2) key=[?,3] key=\"text\"" as key -> raw value text.
class Attrs {
 public:
  Attrs(const std::string& text, const std::string& where) : where_(where) {
    std::size_t i = 0;
    while (i < text.size()) {
      if (text[i] == ' ') { ++i; continue; }
      std::size_t eq = text.find('=', i);
      if (eq == std::string::npos) bad("expected key=value in '" + text + "'");
      std::string key = text.substr(i, eq - i);
      std::size_t j = eq + 1, end;
      if (j < text.size() && text[j] == '"') {  // a quoted string: \" and \\ escaped inside
        end = j + 1;
        while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
        if (end >= text.size()) bad("unclosed string in '" + text + "'");
        ++end;
      } else if (j < text.size() && (text[j] == '(' || text[j] == '[')) {
        end = text.find(text[j] == '(' ? ')' : ']', j);
        if (end == std::string::npos) bad("unclosed bracket in '" + text + "'");
        ++end;
      } else {
        end = text.find(' ', j);
        if (end == std::string::npos) end = text.size();
      }
      if (!values_.emplace(key, text.substr(j, end - j)).second) bad("attribute '" + key + "' given twice");
      i = end;
    }
  }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  const std::string& raw(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) bad("missing attribute '" + key + "'");
    return it->second;
  }
  std::int64_t integer(const std::string& key) const { return parse_int(raw(key)); }
  // "\"text\"" as written by quoted_attr (src/ops/checks.cpp): escapes undone.
  std::string text(const std::string& key) const {
    const std::string& v = raw(key);
    if (v.size() < 2 || v.front() != '"' || v.back() != '"') bad("'" + v + "' is not a quoted string");
    std::string out;
    for (std::size_t i = 1; i + 1 < v.size(); ++i) {
      if (v[i] == '\\' && i + 2 < v.size()) {
        ++i;
        out += v[i] == 'n' ? '\n' : v[i];
      } else {
        out += v[i];
      }
    }
    return out;
  }
  bool flag(const std::string& key) const {
    if (!has(key)) return false;
    if (raw(key) != "True") bad("attribute '" + key + "' must be True");
    return true;
  }
  double real(const std::string& key) const {
    const std::string& v = raw(key);
    double d = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    if (ec != std::errc() || p != v.data() + v.size()) bad("'" + v + "' is not a number");
    return d;
  }
  // "(1,2)", "(1,)", "()"
  std::vector<std::int64_t> ints(const std::string& key) const {
    std::vector<std::int64_t> out;
    for (const std::string& item : items(raw(key), '(', ')', "a tuple")) out.push_back(parse_int(item));
    return out;
  }
  // "[60,?,3]"
  Shape shape(const std::string& key) const {
    const std::string& v = raw(key);
    std::vector<std::int64_t> dims;
    for (const std::string& d : items(v, '[', ']', "a shape")) {
      dims.push_back(d == "?" ? kDynamic : parse_int(d));
      if (dims.back() < 0 && dims.back() != kDynamic) bad("negative dimension in '" + v + "'");
    }
    if (dims.size() > 64) bad("rank too large in '" + v + "'");
    return Shape(std::move(dims));
  }
  DType dtype(const std::string& key) const {
    const std::string& v = raw(key);
    for (DType t : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bool_})
      if (name_of(t) == v) return t;
    bad("unknown dtype '" + v + "'");
  }
  std::size_t size() const { return values_.size(); }

  [[noreturn]] void bad(const std::string& why) const { throw Error(where_ + ": " + why); }

 private:
  // The comma-separated items between `open` and `close` (a trailing comma is allowed).
  std::vector<std::string> items(const std::string& v, char open, char close, const char* what) const {
    if (v.size() < 2 || v.front() != open || v.back() != close) bad("'" + v + "' is not " + what);
    std::vector<std::string> out;
    std::string inner = v.substr(1, v.size() - 2);
    for (std::size_t i = 0; i < inner.size();) {
      std::size_t c = inner.find(',', i);
      if (c == std::string::npos) c = inner.size();
      out.push_back(inner.substr(i, c - i));
      i = c + 1;
    }
    return out;
  }
  std::int64_t parse_int(const std::string& s) const {
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty()) bad("'" + s + "' is not an integer");
    return v;
  }
  std::map<std::string, std::string> values_;
  std::string where_;
};

std::vector<int> as_ints(const std::vector<std::int64_t>& v, const Attrs& a) {
  std::vector<int> out;
  for (auto x : v) {
    if (x < -(1 << 20) || x > (1 << 20)) a.bad("axis " + std::to_string(x) + " out of range");
    out.push_back(static_cast<int>(x));
  }
  return out;
}

Conv2DParams conv_params(const Attrs& a) {
  Conv2DParams p;
  auto s = a.ints("strides");
  if (s.size() != 2) a.bad("strides must have two entries");
  p.sh = s[0];
  p.sw = s[1];
  if (a.has("dilation")) {
    auto d = a.ints("dilation");
    if (d.size() != 2) a.bad("dilation must have two entries");
    p.dh = d[0];
    p.dw = d[1];
  }
  const std::string& pad = a.raw("padding");
  if (pad != "same" && pad != "valid") a.bad("padding must be same or valid");
  p.same = pad == "same";
  if (p.sh < 1 || p.sw < 1 || p.dh < 1 || p.dw < 1) a.bad("strides and dilations must be positive");
  return p;
}

Pool2DParams pool_params(const Attrs& a, bool max) {
  Pool2DParams p;
  auto k = a.ints("pool"), s = a.ints("strides");
  if (k.size() != 2 || s.size() != 2) a.bad("pool and strides must have two entries");
  p.kh = k[0];
  p.kw = k[1];
  p.sh = s[0];
  p.sw = s[1];
  const std::string& pad = a.raw("padding");
  if (pad != "same" && pad != "valid") a.bad("padding must be same or valid");
  p.same = pad == "same";
  p.max = max;
  if (p.kh < 1 || p.kw < 1 || p.sh < 1 || p.sw < 1) a.bad("pool sizes and strides must be positive");
  return p;
}

using Factory = std::function<std::shared_ptr<const Primitive>(const Attrs&)>;

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> table = [] {
    std::map<std::string, Factory> f;
    for (int k = 0; k <= static_cast<int>(UnaryKind::logical_not); ++k) {
      auto kind = static_cast<UnaryKind>(k);
      f[unary_name(kind)] = [kind](const Attrs&) { return std::make_shared<Unary>(kind); };
    }
    for (int k = 0; k <= static_cast<int>(BinaryKind::logical_or); ++k) {
      auto kind = static_cast<BinaryKind>(k);
      f[binary_name(kind)] = [kind](const Attrs&) { return std::make_shared<Binary>(kind); };
    }
    f["where"] = [](const Attrs&) { return std::make_shared<Where>(); };
    f["cast"] = [](const Attrs& a) { return std::make_shared<Cast>(a.dtype("dtype")); };
    f["identity"] = [](const Attrs&) { return std::make_shared<Identity>(false); };
    f["stop_gradient"] = [](const Attrs&) { return std::make_shared<Identity>(true); };
    const std::pair<const char*, ReduceKind> reductions[] = {
        {"sum", ReduceKind::sum}, {"mean", ReduceKind::mean}, {"max", ReduceKind::max}, {"min", ReduceKind::min}};
    for (auto [name, kind] : reductions)
      f[name] = [kind](const Attrs& a) {
        return std::make_shared<Reduce>(kind, as_ints(a.ints("axes"), a), a.flag("keepdims"));
      };
    f["argmax"] = [](const Attrs& a) {
      return std::make_shared<ArgMax>(as_ints({a.integer("axis")}, a)[0], a.flag("keepdims"));
    };
    f["softmax"] = [](const Attrs& a) { return std::make_shared<Softmax>(as_ints({a.integer("axis")}, a)[0], false); };
    f["log_softmax"] = [](const Attrs& a) { return std::make_shared<Softmax>(as_ints({a.integer("axis")}, a)[0], true); };
    f["matmul"] = [](const Attrs& a) { return std::make_shared<MatMul>(a.flag("transpose_a"), a.flag("transpose_b")); };
    f["reshape"] = [](const Attrs& a) { return std::make_shared<Reshape>(Shape(a.ints("shape"))); };
    f["reshape_like"] = [](const Attrs&) { return std::make_shared<ReshapeLike>(); };
    f["expand_dims"] = [](const Attrs& a) { return std::make_shared<ExpandDims>(as_ints({a.integer("axis")}, a)[0]); };
    f["squeeze"] = [](const Attrs& a) { return std::make_shared<Squeeze>(as_ints(a.ints("axes"), a)); };
    f["transpose"] = [](const Attrs& a) { return std::make_shared<Transpose>(as_ints(a.ints("perm"), a)); };
    f["concat"] = [](const Attrs& a) { return std::make_shared<Concat>(as_ints({a.integer("axis")}, a)[0]); };
    f["slice"] = [](const Attrs& a) { return std::make_shared<Slice>(a.ints("begin"), a.ints("end"), a.ints("strides")); };
    f["slice_grad"] = [](const Attrs& a) {
      return std::make_shared<SliceGrad>(Slice(a.ints("begin"), a.ints("end"), a.ints("strides")));
    };
    f["gather"] = [](const Attrs& a) { return std::make_shared<Gather>(as_ints({a.integer("axis")}, a)[0]); };
    f["gather_grad"] = [](const Attrs& a) { return std::make_shared<GatherGrad>(as_ints({a.integer("axis")}, a)[0]); };
    f["one_hot"] = [](const Attrs& a) {
      std::int64_t depth = a.integer("depth");
      if (depth < 0) a.bad("negative depth");
      return std::make_shared<OneHot>(depth, a.dtype("dtype"));
    };
    f["check_numerics"] = [](const Attrs& a) { return std::make_shared<CheckNumerics>(a.text("message")); };
    f["class_indices"] = [](const Attrs& a) {
      std::int64_t classes = a.integer("classes");
      if (classes < 1) a.bad("class_indices needs at least one class");
      return std::make_shared<ClassIndices>(classes, a.text("who"));
    };
    f["shape"] = [](const Attrs&) { return std::make_shared<ShapeOf>(false); };
    f["size"] = [](const Attrs&) { return std::make_shared<ShapeOf>(true); };
    f["zeros_like"] = [](const Attrs&) { return std::make_shared<FillLike>(0.0, std::nullopt); };
    f["ones_like"] = [](const Attrs&) { return std::make_shared<FillLike>(1.0, std::nullopt); };
    f["full_like"] = [](const Attrs& a) {
      return std::make_shared<FillLike>(a.real("value"), a.has("dtype") ? std::optional(a.dtype("dtype")) : std::nullopt);
    };
    f["broadcast_to"] = [](const Attrs& a) { return std::make_shared<BroadcastTo>(a.shape("shape")); };
    f["broadcast_like"] = [](const Attrs&) { return std::make_shared<BroadcastTo>(std::nullopt); };
    f["sum_to"] = [](const Attrs&) { return std::make_shared<SumTo>(); };
    for (auto [name, kind] : {std::pair{"random_uniform", RandomKind::uniform}, std::pair{"random_normal", RandomKind::normal}})
      f[name] = [kind](const Attrs& a) {
        bool like = !a.has("shape");
        double x = a.real(kind == RandomKind::uniform ? "minval" : "mean");
        double y = a.real(kind == RandomKind::uniform ? "maxval" : "stddev");
        std::optional<std::uint64_t> seed;
        if (a.has("seed")) seed = static_cast<std::uint64_t>(a.integer("seed"));
        return std::make_shared<RandomOp>(kind, like ? Shape{} : a.shape("shape"), x, y,
                                          a.has("dtype") ? a.dtype("dtype") : DType::float32, seed, like,
                                          a.flag("stateless"));
      };
    f["conv2d"] = [](const Attrs& a) { return std::make_shared<Conv2D>(conv_params(a)); };
    f["conv2d_backprop_input"] = [](const Attrs& a) { return std::make_shared<Conv2DBackpropInput>(conv_params(a)); };
    f["conv2d_backprop_filter"] = [](const Attrs& a) { return std::make_shared<Conv2DBackpropFilter>(conv_params(a)); };
    f["max_pool2d"] = [](const Attrs& a) { return std::make_shared<Pool2D>(pool_params(a, true)); };
    f["avg_pool2d"] = [](const Attrs& a) { return std::make_shared<Pool2D>(pool_params(a, false)); };
    f["max_pool2d_grad"] = [](const Attrs& a) { return std::make_shared<Pool2DGrad>(pool_params(a, true)); };
    f["avg_pool2d_grad"] = [](const Attrs& a) { return std::make_shared<Pool2DGrad>(pool_params(a, false)); };
    // The rule of a custom gradient is a C++ function, which a file cannot hold: the loaded
    // node passes gradients to its forward ops.
    f["custom_gradient"] = [](const Attrs& a) {
      auto count = [&](const char* key) {
        std::int64_t n = a.integer(key);
        if (n < 0 || n > (1 << 20)) a.bad(std::string(key) + " out of range");
        return static_cast<std::size_t>(n);
      };
      std::size_t outputs = count("outputs");
      if (outputs == 0) a.bad("a custom gradient has at least one output");
      return std::make_shared<CustomGradientOp>(a.text("fn"), count("inputs"), outputs, count("residuals"), nullptr);
    };
    return f;
  }();
  return table;
}

}  // namespace

bool is_builtin_op(const std::string& name) { return factories().count(name) != 0; }
bool can_decode(const std::string& name) { return is_builtin_op(name) || registered_op_factory(name); }

std::shared_ptr<const Primitive> decode_op(const std::string& name, const std::string& attrs, const std::string& where) {
  std::shared_ptr<const Primitive> op;
  auto it = factories().find(name);
  if (it != factories().end()) {
    Attrs a(attrs, where + " (" + name + ")");
    op = it->second(a);
  } else if (OpFactory user = registered_op_factory(name)) {
    try {
      op = user(attrs);
    } catch (const std::exception& e) {
      throw Error(where + ": the factory registered for op '" + name + "' failed on attributes '" + attrs + "': " + e.what());
    }
    if (!op) throw Error(where + ": the factory registered for op '" + name + "' returned no op");
  } else {
    throw Error(where + ": unknown op '" + name + "'; if it is your own op, register it with ef::register_op<YourOp>(\"" +
                name + "\", factory) before loading (otherwise the file was written by a newer eagerflow, or is damaged)");
  }
  if (op->name() != name || op->attrs() != attrs)
    throw Error(where + ": op '" + name + "' with attributes '" + attrs + "' does not read back exactly (got '" +
                op->name() + "' '" + op->attrs() + "')");
  return op;
}

}  // namespace ef::io
