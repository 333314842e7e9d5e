// parse_example: tf.train.Example / SequenceExample protos to tensors, with a protobuf wire
// reader of its own for the five message types involved. Hostile input is bounded: every
// length is checked against the bytes left, varints stop at ten bytes, the nesting is the
// schema's (fixed, no recursion) and unknown fields are skipped, groups refused.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "eagerflow/core/string_tensor.h"
#include "eagerflow/io/example.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/primitive.h"
#include "ops/op_factories.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

using io::ExampleFeature;
using Kind = ExampleFeature::Kind;

struct BadProto {};

// One message's fields, in order.
class Wire {
 public:
  explicit Wire(std::string_view s)
      : p_(reinterpret_cast<const unsigned char*>(s.data())), end_(p_ + s.size()) {}
  // The next field; false at the end. Length-delimited values come as `bytes`.
  bool next(std::uint32_t& field, int& wire, std::uint64_t& v, std::string_view& bytes) {
    if (p_ == end_) return false;
    std::uint64_t key = varint();
    field = static_cast<std::uint32_t>(key >> 3);
    wire = static_cast<int>(key & 7);
    if (field == 0 || (key >> 3) > 0x1FFFFFFF) throw BadProto{};
    switch (wire) {
      case 0: v = varint(); break;
      case 1: take(8); break;
      case 5: {
        const unsigned char* q = take(4);
        v = std::uint64_t{q[0]} | std::uint64_t{q[1]} << 8 | std::uint64_t{q[2]} << 16 | std::uint64_t{q[3]} << 24;
        break;
      }
      case 2: {
        std::uint64_t n = varint();
        if (n > static_cast<std::uint64_t>(end_ - p_)) throw BadProto{};
        bytes = std::string_view(reinterpret_cast<const char*>(p_), n);
        p_ += n;
        break;
      }
      default: throw BadProto{};  // groups (3, 4) and wire types 6, 7: not in these messages
    }
    return true;
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) throw BadProto{};
      unsigned char c = *p_++;
      v |= static_cast<std::uint64_t>(c & 0x7F) << shift;
      if (!(c & 0x80)) return v;
    }
    throw BadProto{};  // more than ten bytes
  }
  bool done() const { return p_ == end_; }

 private:
  const unsigned char* take(std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) < n) throw BadProto{};
    const unsigned char* q = p_;
    p_ += n;
    return q;
  }
  const unsigned char* p_;
  const unsigned char* end_;
};

// A Feature's values: the oneof member set last (protobuf's merge rule), values appended.
struct Values {
  int kind = 0;  // 0 none, 1 bytes, 2 float, 3 int64
  std::vector<std::string_view> b;
  std::vector<float> f;
  std::vector<std::int64_t> i;
  std::size_t size() const { return kind == 1 ? b.size() : kind == 2 ? f.size() : kind == 3 ? i.size() : 0; }
};

void decode_feature(std::string_view feature, Values& out) {
  out.kind = 0;
  out.b.clear();
  out.f.clear();
  out.i.clear();
  Wire w(feature);
  std::uint32_t field;
  int wire;
  std::uint64_t v;
  std::string_view list;
  while (w.next(field, wire, v, list)) {
    if (field < 1 || field > 3) continue;
    if (wire != 2) throw BadProto{};
    if (static_cast<int>(field) != out.kind) {
      out.kind = static_cast<int>(field);
      out.b.clear();
      out.f.clear();
      out.i.clear();
    }
    Wire l(list);
    std::uint32_t f2;
    int w2;
    std::uint64_t v2;
    std::string_view s2;
    while (l.next(f2, w2, v2, s2)) {
      if (f2 != 1) continue;
      if (field == 1) {
        if (w2 != 2) throw BadProto{};
        out.b.push_back(s2);
      } else if (field == 2) {
        if (w2 == 5) {
          std::uint32_t bits = static_cast<std::uint32_t>(v2);
          float x;
          std::memcpy(&x, &bits, 4);
          out.f.push_back(x);
        } else if (w2 == 2) {
          if (s2.size() % 4) throw BadProto{};
          std::size_t at = out.f.size();
          out.f.resize(at + s2.size() / 4);
          std::memcpy(out.f.data() + at, s2.data(), s2.size());  // little-endian, as the wire
        } else {
          throw BadProto{};
        }
      } else {
        if (w2 == 0) {
          out.i.push_back(static_cast<std::int64_t>(v2));
        } else if (w2 == 2) {
          Wire p(s2);
          while (!p.done()) out.i.push_back(static_cast<std::int64_t>(p.varint()));
        } else {
          throw BadProto{};
        }
      }
    }
  }
}

// key -> the (last) map entry's value, for the wanted keys of a Features or FeatureLists message.
void collect_map(std::string_view map_msg, const std::unordered_map<std::string_view, std::vector<std::size_t>>& want,
                 std::vector<std::string_view>& found, std::vector<char>& has) {
  Wire w(map_msg);
  std::uint32_t field;
  int wire;
  std::uint64_t v;
  std::string_view entry;
  while (w.next(field, wire, v, entry)) {
    if (field != 1) continue;
    if (wire != 2) throw BadProto{};
    Wire e(entry);
    std::string_view key, value, s;
    std::uint32_t f2;
    int w2;
    while (e.next(f2, w2, v, s)) {
      if (f2 == 1 || f2 == 2) {
        if (w2 != 2) throw BadProto{};
        (f2 == 1 ? key : value) = s;
      }
    }
    auto it = want.find(key);
    if (it == want.end()) continue;
    for (std::size_t k : it->second) {
      found[k] = value;
      has[k] = 1;
    }
  }
}

const char* type_name(DType d) { return d == DType::float32 ? "float" : d == DType::int64 ? "int64" : "string"; }
const char* kind_type_name(int k) { return k == 1 ? "string" : k == 2 ? "float" : "int64"; }
int kind_of(DType d) { return d == DType::string ? 1 : d == DType::float32 ? 2 : 3; }

std::int64_t elements(const std::vector<std::int64_t>& s) {
  std::int64_t n = 1;
  for (std::int64_t d : s) n *= d;
  return n;
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

// Growing typed columns of one output.
struct Column {
  DType dtype;
  std::vector<float> f;
  std::vector<std::int64_t> i;
  std::vector<std::string_view> b;
  std::size_t size() const { return dtype == DType::float32 ? f.size() : dtype == DType::int64 ? i.size() : b.size(); }
  void append(const Values& v) {
    if (dtype == DType::float32) f.insert(f.end(), v.f.begin(), v.f.end());
    else if (dtype == DType::int64) i.insert(i.end(), v.i.begin(), v.i.end());
    else b.insert(b.end(), v.b.begin(), v.b.end());
  }
  void append_range(const Values& v, std::size_t from, std::size_t n) {
    if (dtype == DType::float32) f.insert(f.end(), v.f.begin() + from, v.f.begin() + from + n);
    else if (dtype == DType::int64) i.insert(i.end(), v.i.begin() + from, v.i.begin() + from + n);
    else b.insert(b.end(), v.b.begin() + from, v.b.begin() + from + n);
  }
  // n copies of element k of `t` cycled (a default: its own size, or a scalar).
  void append_default(const Tensor& t, std::size_t n) {
    std::size_t m = static_cast<std::size_t>(t.num_elements());
    if (dtype == DType::float32) {
      auto d = t.data<float>();
      for (std::size_t k = 0; k < n; ++k) f.push_back(d[k % m]);
    } else if (dtype == DType::int64) {
      auto d = t.data<std::int64_t>();
      for (std::size_t k = 0; k < n; ++k) i.push_back(d[k % m]);
    } else {
      auto d = t.data<std::string_view>();
      for (std::size_t k = 0; k < n; ++k) b.push_back(d[k % m]);
    }
  }
  void append_zeros(std::size_t n) {
    if (dtype == DType::float32) f.resize(f.size() + n, 0.f);
    else if (dtype == DType::int64) i.resize(i.size() + n, 0);
    else b.resize(b.size() + n);
  }
  Tensor finish(const Shape& shape) const {
    if (dtype == DType::float32) return tensor(f, shape);
    if (dtype == DType::int64) return tensor(i, shape);
    StringTensorBuilder sb(b.size());
    for (std::string_view s : b) sb.append(s);
    return std::move(sb).finish(shape);
  }
};

class ParseExample : public MergeablePrimitive<ParseExample> {
 public:
  ParseExample(std::vector<ExampleFeature> features, bool sequence) : features_(std::move(features)), sequence_(sequence) {
    for (const auto& f : features_) {
      if (f.dtype != DType::float32 && f.dtype != DType::int64 && f.dtype != DType::string)
        fail(kWrongType, name(), "feature '" + f.key + "': dtype must be float32, int64 or string, got " + std::string(name_of(f.dtype)));
      for (std::int64_t d : f.shape)
        if (d < 0) fail(name(), "feature '" + f.key + "': the shape must be fully defined, got " + shape_text(f.shape));
      if (!sequence_ && f.kind == Kind::var_len_sequence) fail(name(), "feature lists are read from SequenceExamples only");
    }
  }
  const char* name() const override { return "parse_example"; }
  bool takes_strings() const override { return true; }
  bool is_differentiable() const override { return false; }

  // The features as one text: per feature "kind dtype has_default allow_missing rank dims... keylen:key".
  OpParams parameters() const override {
    std::string spec;
    for (const auto& f : features_) {
      spec += std::to_string(static_cast<int>(f.kind)) + " " + std::to_string(static_cast<int>(f.dtype)) + " " +
              (f.has_default ? "1 " : "0 ") + (f.allow_missing ? "1 " : "0 ") + std::to_string(f.shape.size()) + " ";
      for (std::int64_t d : f.shape) spec += std::to_string(d) + " ";
      spec += std::to_string(f.key.size()) + ":" + f.key;
    }
    OpParams p;
    p.add("features", spec);
    p.add_flag("sequence", sequence_);
    return p;
  }
  static std::vector<ExampleFeature> parse_spec(const std::string& spec) {
    std::vector<ExampleFeature> out;
    std::size_t at = 0;
    auto number = [&]() -> std::int64_t {
      std::size_t end = at;
      while (end < spec.size() && spec[end] != ' ' && spec[end] != ':') ++end;
      if (end == at || end == spec.size()) fail("parse_example", "a damaged features parameter");
      std::int64_t v = std::stoll(spec.substr(at, end - at));
      at = end + 1;
      return v;
    };
    while (at < spec.size()) {
      ExampleFeature f;
      f.kind = static_cast<Kind>(number());
      f.dtype = static_cast<DType>(number());
      f.has_default = number() != 0;
      f.allow_missing = number() != 0;
      std::int64_t rank = number();
      if (rank < 0 || rank > 32) fail("parse_example", "a damaged features parameter");
      for (std::int64_t r = 0; r < rank; ++r) f.shape.push_back(number());
      std::int64_t n = number();
      if (n < 0 || static_cast<std::size_t>(n) > spec.size() - at) fail("parse_example", "a damaged features parameter");
      f.key = spec.substr(at, static_cast<std::size_t>(n));
      at += static_cast<std::size_t>(n);
      out.push_back(std::move(f));
    }
    return out;
  }

  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    std::size_t n_defaults = 0;
    for (const auto& f : features_) n_defaults += f.has_default ? 1 : 0;
    expect_inputs(*this, in, 1 + n_defaults);
    if (in[0].dtype() != DType::string || in[0].rank() > 1)
      fail(kWrongType, name(), "serialized must be a string scalar or vector, got " + in[0].spec().str());
    const bool batch = in[0].rank() == 1;
    const std::int64_t b = batch ? in[0].shape()[0] : 0;
    std::vector<TensorSpec> out;
    std::size_t d = 1;
    for (const auto& f : features_) {
      if (f.has_default) {
        const Tensor& t = in[d++];
        if (t.dtype() != f.dtype)
          fail(kWrongType, name(), "the default of '" + f.key + "' must be " + type_name(f.dtype) + ", got " + t.spec().str());
        if (!t.shape().is_static()) fail(name(), "the default of '" + f.key + "' must have a known shape");
        std::int64_t n = t.num_elements();
        if (f.kind == Kind::fixed && n != 1 && n != elements(f.shape))
          fail(name(), "the default of '" + f.key + "' has " + std::to_string(n) + " values, the shape " + shape_text(f.shape) +
                           " holds " + std::to_string(elements(f.shape)));
        if (f.kind == Kind::fixed_sequence && n != 1 && n != elements(f.shape))
          fail(name(), "the default of '" + f.key + "' must be a scalar or of shape " + shape_text(f.shape));
        if (n == 0) fail(name(), "the default of '" + f.key + "' is empty");
      }
      using V = std::vector<std::int64_t>;
      V lead = batch ? V{b} : V{};
      switch (f.kind) {
        case Kind::fixed: {
          V s = lead;
          s.insert(s.end(), f.shape.begin(), f.shape.end());
          out.push_back({f.dtype, Shape(s), {}});
          break;
        }
        case Kind::fixed_sequence: {
          V s = lead;
          s.push_back(kDynamic);
          s.insert(s.end(), f.shape.begin(), f.shape.end());
          out.push_back({f.dtype, Shape(s), {}});
          out.push_back({DType::int64, Shape(lead), {}});
          break;
        }
        case Kind::var_len:
        case Kind::var_len_sequence: {
          std::int64_t r = (batch ? 2 : 1) + (f.kind == Kind::var_len_sequence ? 1 : 0);
          out.push_back({DType::int64, Shape{kDynamic, r}, {}});
          out.push_back({f.dtype, Shape{kDynamic}, {}});
          out.push_back({DType::int64, Shape{r}, {}});
          break;
        }
      }
    }
    return out;
  }

  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override {
    const bool batch = in[0].rank() == 1;
    auto serialized = in[0].data<std::string_view>();
    const std::size_t B = serialized.size();
    const std::size_t F = features_.size();
    // The wanted keys of each section (a key may be asked for twice).
    std::unordered_map<std::string_view, std::vector<std::size_t>> ctx_keys, seq_keys;
    std::vector<const Tensor*> defaults(F, nullptr);
    std::size_t d = 1;
    for (std::size_t k = 0; k < F; ++k) {
      const auto& f = features_[k];
      bool in_lists = sequence_ && (f.kind == Kind::fixed_sequence || f.kind == Kind::var_len_sequence);
      (in_lists ? seq_keys : ctx_keys)[f.key].push_back(k);
      if (f.has_default) defaults[k] = &in[d++];
    }
    std::vector<Column> values(F), aux(F);  // aux: var_len indices (as int64 in `i`), or lengths
    for (std::size_t k = 0; k < F; ++k) {
      values[k].dtype = features_[k].dtype;
      aux[k].dtype = DType::int64;
    }
    std::vector<std::int64_t> max_len(F, 0), max_steps(F, 0);
    std::vector<std::string_view> found(F);
    std::vector<char> has(F);
    Values v;
    for (std::size_t e = 0; e < B; ++e) {
      std::fill(has.begin(), has.end(), 0);
      std::string_view s = serialized[e];
      try {
        Wire w(s);
        std::uint32_t field;
        int wire;
        std::uint64_t x;
        std::string_view msg;
        while (w.next(field, wire, x, msg)) {
          if (field != 1 && field != 2) continue;
          if (wire != 2) throw BadProto{};
          if (field == 1) collect_map(msg, ctx_keys, found, has);
          else if (sequence_) collect_map(msg, seq_keys, found, has);
        }
      } catch (const BadProto&) {
        bad_input(s, e, batch);
      }
      for (std::size_t k = 0; k < F; ++k) {
        const auto& f = features_[k];
        const std::int64_t n = elements(f.shape);
        auto decode = [&](std::string_view feat, std::int64_t index) {
          try {
            decode_feature(feat, v);
          } catch (const BadProto&) {
            bad_input(s, e, batch);
          }
          if (v.kind != 0 && v.kind != kind_of(f.dtype))
            fail(name(), "Key: " + f.key + ", Index: " + std::to_string(index) + ".  Data types don't match. Data type: " +
                             kind_type_name(v.kind) + " but expected type: " + type_name(f.dtype));
        };
        const bool list = sequence_ && (f.kind == Kind::fixed_sequence || f.kind == Kind::var_len_sequence);
        if (!list) {
          if (has[k]) decode(found[k], static_cast<std::int64_t>(e));
          switch (f.kind) {
            case Kind::fixed:
              if (!has[k]) {
                if (!defaults[k])
                  fail(name(), "Feature: " + f.key + " (data type: " + type_name(f.dtype) + ") is required but could not be found.");
                values[k].append_default(*defaults[k], static_cast<std::size_t>(n));
              } else {
                if (static_cast<std::int64_t>(v.size()) != n)
                  fail(name(), "Key: " + f.key + ", Index: " + std::to_string(e) + ".  Number of " + type_name(f.dtype) +
                                   " values != expected.  Values size: " + std::to_string(v.size()) +
                                   " but output shape: " + shape_text(f.shape));
                values[k].append(v);
              }
              break;
            case Kind::var_len: {
              std::size_t m = has[k] ? v.size() : 0;
              for (std::size_t j = 0; j < m; ++j) {
                if (batch) aux[k].i.push_back(static_cast<std::int64_t>(e));
                aux[k].i.push_back(static_cast<std::int64_t>(j));
              }
              if (m) values[k].append(v);
              max_len[k] = std::max<std::int64_t>(max_len[k], static_cast<std::int64_t>(m));
              break;
            }
            case Kind::fixed_sequence: {
              std::size_t m = has[k] ? v.size() : 0;
              if (n == 0 ? m != 0 : m % static_cast<std::size_t>(n) != 0)
                fail(name(), "Key: " + f.key + ", Index: " + std::to_string(e) + ".  Number of " + type_name(f.dtype) +
                                 " values is not a multiple of stride length. Saw " + std::to_string(m) +
                                 " values but output shape is: " + shape_text(f.shape));
              if (m) values[k].append(v);
              std::int64_t steps = n == 0 ? 0 : static_cast<std::int64_t>(m) / n;
              aux[k].i.push_back(steps);
              max_steps[k] = std::max(max_steps[k], steps);
              break;
            }
            case Kind::var_len_sequence: break;
          }
          continue;
        }
        // A feature list: its steps, each one Feature.
        std::vector<std::string_view> steps;
        if (has[k]) {
          try {
            Wire l(found[k]);
            std::uint32_t field;
            int wire;
            std::uint64_t x;
            std::string_view msg;
            while (l.next(field, wire, x, msg)) {
              if (field != 1) continue;
              if (wire != 2) throw BadProto{};
              steps.push_back(msg);
            }
          } catch (const BadProto&) {
            bad_input(s, e, batch);
          }
        } else if (f.kind == Kind::fixed_sequence && !f.allow_missing && !f.has_default) {
          fail(name(), "Name: <unknown>, Feature list '" + f.key +
                           "' is required but could not be found.  Did you mean to include it in "
                           "feature_list_dense_missing_assumed_empty or feature_list_dense_defaults?");
        }
        const std::int64_t T = static_cast<std::int64_t>(steps.size());
        for (std::int64_t t = 0; t < T; ++t) {
          decode(steps[static_cast<std::size_t>(t)], t);
          if (f.kind == Kind::fixed_sequence) {
            if (static_cast<std::int64_t>(v.size()) != n)
              fail(name(), "Name: <unknown>, Key: " + f.key + ", Index: " + std::to_string(t) + ".  Number of " +
                               type_name(f.dtype) + " values != expected.  values size: " + std::to_string(v.size()) +
                               " but output shape: " + shape_text(f.shape));
            values[k].append(v);
          } else {
            for (std::size_t j = 0; j < v.size(); ++j) {
              if (batch) aux[k].i.push_back(static_cast<std::int64_t>(e));
              aux[k].i.push_back(t);
              aux[k].i.push_back(static_cast<std::int64_t>(j));
            }
            values[k].append(v);
            max_len[k] = std::max<std::int64_t>(max_len[k], static_cast<std::int64_t>(v.size()));
          }
        }
        if (f.kind == Kind::fixed_sequence) aux[k].i.push_back(T);
        max_steps[k] = std::max(max_steps[k], T);
      }
    }
    // Assemble.
    std::size_t o = 0;
    for (std::size_t k = 0; k < F; ++k) {
      const auto& f = features_[k];
      using V = std::vector<std::int64_t>;
      V lead = batch ? V{static_cast<std::int64_t>(B)} : V{};
      switch (f.kind) {
        case Kind::fixed: {
          V s = lead;
          s.insert(s.end(), f.shape.begin(), f.shape.end());
          out[o++] = values[k].finish(Shape(s));
          break;
        }
        case Kind::fixed_sequence: {
          const std::int64_t n = elements(f.shape);
          V s = lead;
          s.push_back(max_steps[k]);
          s.insert(s.end(), f.shape.begin(), f.shape.end());
          if (!batch) {
            out[o++] = values[k].finish(Shape(s));
          } else {
            // Padded to the longest, each missing step the default (or zeros).
            Column padded{f.dtype, {}, {}, {}};
            std::size_t at = 0;
            for (std::size_t e = 0; e < B; ++e) {
              std::int64_t steps = aux[k].i[e];
              std::size_t m = static_cast<std::size_t>(steps * n);
              copy_range(values[k], at, m, padded);
              at += m;
              std::size_t pad = static_cast<std::size_t>((max_steps[k] - steps) * n);
              if (defaults[k]) padded.append_default(*defaults[k], pad);
              else padded.append_zeros(pad);
            }
            out[o++] = padded.finish(Shape(s));
          }
          out[o++] = tensor(aux[k].i, Shape(lead));
          break;
        }
        case Kind::var_len:
        case Kind::var_len_sequence: {
          const std::int64_t r = (batch ? 2 : 1) + (f.kind == Kind::var_len_sequence ? 1 : 0);
          const std::int64_t N = static_cast<std::int64_t>(values[k].size());
          out[o++] = tensor(aux[k].i, Shape{N, r});
          out[o++] = values[k].finish(Shape{N});
          std::vector<std::int64_t> dense;
          if (batch) dense.push_back(static_cast<std::int64_t>(B));
          if (f.kind == Kind::var_len_sequence) dense.push_back(max_steps[k]);
          dense.push_back(max_len[k]);
          out[o++] = tensor(dense, Shape{r});
          break;
        }
      }
    }
  }

 private:
  static void copy_range(const Column& from, std::size_t at, std::size_t n, Column& to) {
    if (from.dtype == DType::float32) to.f.insert(to.f.end(), from.f.begin() + at, from.f.begin() + at + n);
    else if (from.dtype == DType::int64) to.i.insert(to.i.end(), from.i.begin() + at, from.i.begin() + at + n);
    else to.b.insert(to.b.end(), from.b.begin() + at, from.b.begin() + at + n);
  }
  [[noreturn]] void bad_input(std::string_view s, std::size_t e, bool batch) const {
    std::string shown;
    for (unsigned char c : s.substr(0, 48)) {
      if (c >= 32 && c < 127 && c != '\\') {
        shown.push_back(static_cast<char>(c));
      } else {
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        shown += hex;
      }
    }
    fail(name(), std::string("Could not parse ") + (sequence_ ? "SequenceExample" : "example") + " input" +
                     (batch ? " " + std::to_string(e) : std::string()) + ", value: '" + shown + (s.size() > 48 ? "...'" : "'"));
  }

  std::vector<ExampleFeature> features_;
  bool sequence_;
};

}  // namespace

void detail::add_example_factories(detail::OpFactories& f) {
  f["parse_example"] = [](const OpParams& p) {
    return std::make_shared<ParseExample>(ParseExample::parse_spec(p.text("features")), p.flag("sequence"));
  };
}

void detail::register_example_rules() {
  register_op_rules<ParseExample>({.runs_per_example = true, .onnx_unsupported = "parsing protos has no ONNX form"});
}

namespace io {
std::vector<Tensor> parse_example(const Tensor& serialized, const std::vector<ExampleFeature>& features,
                                  const std::vector<Tensor>& defaults, bool sequence) {
  std::vector<Tensor> in{serialized};
  in.insert(in.end(), defaults.begin(), defaults.end());
  return dispatch(ParseExample(features, sequence), in);
}
}  // namespace io

}  // namespace ef
