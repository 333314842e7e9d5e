// In-memory sources: from_tensor_slices, from_tensors, from_generator, range.
#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>

#include "data/dataset_internal.h"
#include "eagerflow/core/string_tensor.h"
#include "data/dataset_rows.h"

namespace ef::data {
using detail::Flat;
using detail::fail_data;

namespace detail {

Tensor rows_view(const Tensor& t, std::int64_t begin, std::int64_t end, bool drop_axis) {
  std::vector<std::int64_t> dims = t.shape().dims();
  std::size_t row_bytes = size_of(t.dtype());
  for (std::size_t a = 1; a < dims.size(); ++a) row_bytes *= static_cast<std::size_t>(dims[a]);
  auto impl = new_tensor_impl();
  impl->dtype = t.dtype();
  impl->storage = t.impl().storage;
  impl->offset = t.impl().offset + static_cast<std::size_t>(begin) * row_bytes;
  if (drop_axis) dims.erase(dims.begin());
  else dims[0] = end - begin;
  impl->shape = Shape(dims);
  return Tensor(std::move(impl));
}

Tensor stacked(const std::vector<const Tensor*>& parts, const TensorSpec& like) {
  std::vector<std::int64_t> dims{static_cast<std::int64_t>(parts.size())};
  for (auto d : parts[0]->shape().dims()) dims.push_back(d);
  Tensor out = Tensor::empty(like.dtype, Shape(dims));
  std::size_t bytes = parts[0]->nbytes();
  auto* dst = static_cast<std::byte*>(out.raw_mutable_data());
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (bytes) std::memcpy(dst + i * bytes, parts[i]->raw_data(), bytes);
  if (like.dtype == DType::string) {  // the copied views point into the parts' bytes
    std::vector<Tensor> sources;
    for (const Tensor* p : parts) sources.push_back(*p);
    ef::detail::keep_string_bytes(sources, std::span<const Tensor>(&out, 1));
  }
  return out;
}

const std::vector<Tensor>* SlicesNode::tensors_of(const Node& n) {
  auto* s = dynamic_cast<const SlicesNode*>(&n);
  return s ? &s->tensors : nullptr;
}

SlicesNode::SlicesNode(ElementSpec s, std::vector<Tensor> t, std::int64_t n) : Node(std::move(s)), tensors(std::move(t)), rows(n) {}

std::unique_ptr<IteratorImpl> SlicesNode::iterate() const {
  struct It final : IteratorImpl {
    const SlicesNode* node;
    std::int64_t i = 0;
    explicit It(const SlicesNode* n) : node(n) {}
    bool next(Flat& out) override {
      if (i >= node->rows) return false;
      out.clear();
      for (const auto& t : node->tensors) out.push_back(rows_view(t, i, i + 1, true));
      ++i;
      return true;
    }
  };
  return std::make_unique<It>(this);
}

}  // namespace detail

namespace {

void check_concrete(const char* what, const Element& e) {
  if (e.size() == 0) fail_data(std::string(what) + " needs at least one tensor");
  for (const auto& t : e.values()) {
    if (!t.defined()) fail_data(std::string(what) + " got an undefined tensor");
    if (t.is_symbolic() || t.is_keras_tensor())
      fail_data(std::string(what) + " needs concrete tensors, got a placeholder " + t.spec().str());
  }
}

struct TensorsNode final : detail::Node {
  std::vector<Tensor> tensors;
  TensorsNode(ElementSpec s, std::vector<Tensor> t) : Node(std::move(s)), tensors(std::move(t)) {}
  std::int64_t cardinality() const override { return 1; }
  std::unique_ptr<detail::IteratorImpl> iterate() const override {
    struct It final : detail::IteratorImpl {
      const TensorsNode* node;
      bool done = false;
      explicit It(const TensorsNode* n) : node(n) {}
      bool next(Flat& out) override {
        if (done) return false;
        done = true;
        out = node->tensors;
        return true;
      }
    };
    return std::make_unique<It>(this);
  }
};

struct GeneratorNode final : detail::Node {
  std::function<Dataset::Generator()> make;
  GeneratorNode(ElementSpec s, std::function<Dataset::Generator()> m) : Node(std::move(s)), make(std::move(m)) {}
  std::int64_t cardinality() const override { return kUnknownCardinality; }
  std::unique_ptr<detail::IteratorImpl> iterate() const override {
    struct It final : detail::IteratorImpl {
      const GeneratorNode* node;
      Dataset::Generator gen;
      bool started = false, done = false;
      std::int64_t index = 0;
      explicit It(const GeneratorNode* n) : node(n) {}
      bool next(Flat& out) override {
        if (done) return false;
        std::optional<Element> e;
        try {
          if (!started) {
            started = true;
            gen = node->make();
            if (!gen) fail_data("from_generator: the factory returned an empty generator");
          }
          e = gen();
        } catch (const std::exception& ex) {
          done = true;
          throw Error(kind_of(ex), detail::with_index("from_generator", index, ex.what()));
        }
        if (!e) {
          done = true;
          gen = nullptr;  // frees what the generator holds (a Python generator) now
          return false;
        }
        if (e->structure() != node->spec.structure || e->keys() != node->spec.keys) {
          done = true;
          fail_data("from_generator: element " + std::to_string(index) + " is " + e->spec().str() +
                    ", which does not match the element spec " + node->spec.str());
        }
        try {
          detail::check_element(node->spec, e->values(), "from_generator", index);
        } catch (...) {
          done = true;
          throw;
        }
        ++index;
        out = std::move(e->values());
        return true;
      }
    };
    return std::make_unique<It>(this);
  }
};

struct RangeNode final : detail::Node {
  std::int64_t start, stop, step;
  RangeNode(std::int64_t a, std::int64_t b, std::int64_t s, DType d)
      : Node(ElementSpec{Structure::tensor, {}, {TensorSpec{d, Shape{}, {}}}}), start(a), stop(b), step(s) {}
  // Counted in 128 bits: range(-2^63, 2^63 - 1) has 2^64 - 1 elements, counted as the most
  // int64 holds (never reached) rather than wrapped to a negative "infinite".
  std::int64_t cardinality() const override {
    __int128 n = 0;
    if (step > 0 && stop > start) n = (static_cast<__int128>(stop) - start + step - 1) / step;
    if (step < 0 && stop < start) n = (static_cast<__int128>(start) - stop - step - 1) / -static_cast<__int128>(step);
    return n > std::numeric_limits<std::int64_t>::max() ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(n);
  }
  std::unique_ptr<detail::IteratorImpl> iterate() const override {
    struct It final : detail::IteratorImpl {
      const RangeNode* node;
      std::int64_t i = 0, n;
      explicit It(const RangeNode* r) : node(r), n(r->cardinality()) {}
      bool next(Flat& out) override {
        if (i >= n) return false;
        auto v = static_cast<std::int64_t>(node->start + static_cast<__int128>(i) * node->step);  // in [start, stop)
        ++i;
        out.clear();
        DType d = node->spec.specs[0].dtype;
        out.push_back(d == DType::int64 ? scalar<std::int64_t>(v)
                      : d == DType::int32 ? scalar<std::int32_t>(static_cast<std::int32_t>(v))
                      : d == DType::float64 ? scalar<double>(static_cast<double>(v))
                                            : scalar<float>(static_cast<float>(v)));
        return true;
      }
    };
    return std::make_unique<It>(this);
  }
};

}  // namespace

Dataset Dataset::from_tensor_slices(const Element& tensors) {
  check_concrete("from_tensor_slices", tensors);
  std::int64_t n = -1;
  ElementSpec spec;
  spec.structure = tensors.structure();
  spec.keys = tensors.keys();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors.values()[i];
    if (t.rank() < 1) fail_data("from_tensor_slices slices axis 0, but tensor " + std::to_string(i) + " is a scalar " + t.spec().str());
    if (n >= 0 && t.dim(0) != n)
      fail_data("from_tensor_slices: every tensor needs the same first dimension, got " + tensors.values()[0].spec().str() +
                " and " + t.spec().str());
    n = t.dim(0);
    std::vector<std::int64_t> dims = t.shape().dims();
    dims.erase(dims.begin());
    spec.specs.push_back(TensorSpec{t.dtype(), Shape(dims), {}});
  }
  return Dataset(std::make_shared<detail::SlicesNode>(std::move(spec), tensors.values(), n));
}

Dataset Dataset::from_tensors(const Element& tensors) {
  check_concrete("from_tensors", tensors);
  return Dataset(std::make_shared<TensorsNode>(tensors.spec(), tensors.values()));
}

Dataset Dataset::from_generator(std::function<Generator()> make, ElementSpec spec) {
  if (!make) fail_data("from_generator needs a callable");
  if (spec.specs.empty()) fail_data("from_generator needs an element spec with at least one tensor");
  if (spec.structure == Structure::tensor && spec.specs.size() != 1)
    fail_data("from_generator: a one-tensor element spec holds " + std::to_string(spec.specs.size()) + " specs");
  if (spec.structure == Structure::map) {
    if (spec.keys.size() != spec.specs.size()) fail_data("from_generator: a map element spec needs one key per spec");
    // Keys in the order elements use (sorted).
    std::map<std::string, Tensor> probe;
    std::vector<std::pair<std::string, TensorSpec>> kv;
    for (std::size_t i = 0; i < spec.keys.size(); ++i) kv.emplace_back(spec.keys[i], spec.specs[i]);
    std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    spec.keys.clear();
    spec.specs.clear();
    for (auto& [k, s] : kv) {
      spec.keys.push_back(k);
      spec.specs.push_back(s);
    }
  } else {
    spec.keys.clear();
  }
  return Dataset(std::make_shared<GeneratorNode>(std::move(spec), std::move(make)));
}

Dataset Dataset::range(std::int64_t stop) { return range(0, stop); }

Dataset Dataset::range(std::int64_t start, std::int64_t stop, std::int64_t step, DType dtype) {
  if (step == 0) fail_data("range: step must not be 0");
  if (dtype == DType::bool_) fail_data("range: dtype must be numeric, got bool");
  // Every value must fit the dtype: an int32 range past 2^31 would wrap.
  auto n = std::make_shared<RangeNode>(start, stop, step, dtype);
  if (dtype == DType::int32 && n->cardinality() > 0) {
    __int128 last = start + static_cast<__int128>(n->cardinality() - 1) * step;
    auto fits = [](__int128 v) { return v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max(); };
    if (!fits(start) || !fits(last))
      fail_data("range(" + std::to_string(start) + ", " + std::to_string(stop) + ", " + std::to_string(step) +
                "): values outside int32 (use int64)");
  }
  return Dataset(std::move(n));
}

}  // namespace ef::data
