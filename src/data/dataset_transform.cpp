// Transformations on the consumer's thread: map (sequential), filter, shuffle, batch,
// padded_batch, repeat, take, skip, zip, enumerate, interleave.
#include <algorithm>
#include <cstring>
#include <deque>
#include <exception>
#include <random>

#include "data/dataset_internal.h"
#include "data/dataset_rows.h"
#include "eagerflow/function/function.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random.h"

namespace ef::data {
using detail::Flat;
using detail::fail_data;
using detail::IteratorImpl;
using detail::Node;
using NodePtr = std::shared_ptr<const Node>;

namespace {

const NodePtr& need(const NodePtr& n) {
  static const NodePtr empty = Dataset::range(0).node();
  return n ? n : empty;
}

std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return kInfiniteCardinality;
  return r;
}

// ---------------------------------------------------------------- map
using CallFn = std::function<void(const Flat&, Flat&)>;

struct MapNode final : Node {
  NodePtr input;
  std::shared_ptr<const CallFn> call;
  std::int64_t threads;
  bool deterministic;
  MapNode(ElementSpec s, NodePtr in, std::shared_ptr<const CallFn> c, std::int64_t t, bool d)
      : Node(std::move(s)), input(std::move(in)), call(std::move(c)), threads(t), deterministic(d) {}
  std::int64_t cardinality() const override { return input->cardinality(); }
  std::unique_ptr<IteratorImpl> iterate() const override {
    if (threads > 0) return detail::make_parallel_map(input->iterate(), call, threads, deterministic);
    struct It final : IteratorImpl {
      std::unique_ptr<IteratorImpl> in;
      std::shared_ptr<const CallFn> call;
      std::int64_t index = 0;
      Flat buf;
      bool next(Flat& out) override {
        if (!in->next(buf)) return false;
        try {
          (*call)(buf, out);
        } catch (const std::exception& e) {
          throw Error(kind_of(e), detail::with_index("map", index, e.what()));
        }
        ++index;
        return true;
      }
    };
    auto it = std::make_unique<It>();
    it->in = input->iterate();
    it->call = call;
    return it;
  }
};

// Traces fn once for `in` (dims kDynamic where the spec has them) and returns the replay and
// the output spec. The trace's errors (a function that reads values, say) surface here, when
// the pipeline is built, as tf.data's do.
std::pair<std::shared_ptr<const CallFn>, ElementSpec> traced(const std::string& what, const ElementSpec& in,
                                                              std::function<Element(const Element&)> fn) {
  if (!fn) fail_data(what + " needs a function");
  auto out_spec = std::make_shared<ElementSpec>();
  auto body = [fn, in, out_spec](const std::vector<Tensor>& flat) -> std::vector<Tensor> {
    Element r = fn(detail::element_of(in, flat));
    ElementSpec s;
    s.structure = r.structure();
    s.keys = r.keys();
    for (const auto& t : r.values()) {
      if (!t.defined()) fail_data("the function returned an undefined tensor");
      s.specs.push_back(t.spec());
    }
    if (s.specs.empty()) fail_data("the function returned an element of no tensors");
    *out_spec = std::move(s);
    return r.values();
  };
  FunctionOptions options;
  options.input_signature = InputSignature{ArgSpec(in.specs)};
  options.name = "Dataset." + what;
  options.arg_names = {"element"};
  auto f = ef::function(std::move(body), options);
  try {
    f.get_concrete_function(in.specs);
  } catch (const std::exception& e) {
    fail_data(kind_of(e), what + ": tracing the function for the element spec " + in.str() + " failed: " + e.what());
  }
  auto call = std::make_shared<const CallFn>([f](const Flat& x, Flat& y) { y = f(x); });
  return {std::move(call), *out_spec};
}

// ---------------------------------------------------------------- filter
struct FilterNode final : Node {
  NodePtr input;
  std::shared_ptr<const CallFn> call;
  FilterNode(NodePtr in, std::shared_ptr<const CallFn> c) : Node(in->spec), input(std::move(in)), call(std::move(c)) {}
  std::int64_t cardinality() const override {
    std::int64_t n = input->cardinality();
    return n == kInfiniteCardinality ? n : kUnknownCardinality;
  }
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It final : IteratorImpl {
      std::unique_ptr<IteratorImpl> in;
      std::shared_ptr<const CallFn> call;
      std::int64_t index = 0;
      Flat keep;
      bool next(Flat& out) override {
        while (in->next(out)) {
          bool pass;
          try {
            (*call)(out, keep);
            const Tensor& p = keep.at(0);
            pass = p.data<bool>()[0];  // a bool scalar: checked when the predicate was traced
          } catch (const std::exception& e) {
            throw Error(kind_of(e), detail::with_index("filter", index, e.what()));
          }
          ++index;
          if (pass) return true;
        }
        return false;
      }
    };
    auto it = std::make_unique<It>();
    it->in = input->iterate();
    it->call = call;
    return it;
  }
};

// ---------------------------------------------------------------- shuffle
struct ShuffleNode final : Node {
  NodePtr input;
  std::int64_t buffer;
  std::optional<std::uint64_t> seed;
  bool reshuffle;
  mutable std::atomic<std::uint64_t> passes{0};
  ShuffleNode(NodePtr in, std::int64_t b, std::optional<std::uint64_t> s, bool r)
      : Node(in->spec), input(std::move(in)), buffer(b), seed(s), reshuffle(r) {}
  std::int64_t cardinality() const override { return input->cardinality(); }
  std::unique_ptr<IteratorImpl> iterate() const override {
    std::uint64_t pass = passes.fetch_add(1);
    std::uint64_t s;
    if (seed) {
      s = *seed * 0x9E3779B97F4A7C15ULL + (reshuffle ? pass : 0);
    } else {
      // From ef's generator when the pass starts: ef::random::set_seed repeats the order.
      s = static_cast<std::uint64_t>(random::uniform({}, 0.0, 1.0, DType::float64).item<double>() * 9007199254740992.0);
    }
    struct It final : IteratorImpl {
      std::unique_ptr<IteratorImpl> in;
      std::int64_t capacity;
      std::mt19937_64 rng;
      std::vector<Flat> buf;
      bool input_done = false;
      bool next(Flat& out) override {
        while (!input_done && static_cast<std::int64_t>(buf.size()) < capacity) {
          Flat e;
          if (!in->next(e)) {
            input_done = true;
            break;
          }
          buf.push_back(std::move(e));
        }
        if (buf.empty()) return false;
        std::uniform_int_distribution<std::size_t> pick(0, buf.size() - 1);
        std::size_t i = pick(rng);
        out = std::move(buf[i]);
        if (i + 1 != buf.size()) buf[i] = std::move(buf.back());
        buf.pop_back();
        return true;
      }
    };
    auto it = std::make_unique<It>();
    it->in = input->iterate();
    it->capacity = buffer;
    it->rng.seed(s);
    return it;
  }
};

// ---------------------------------------------------------------- batch, padded_batch
TensorSpec batched(const TensorSpec& s, std::int64_t batch) {
  std::vector<std::int64_t> dims{batch};
  for (auto d : s.shape.dims()) dims.push_back(d);
  return {s.dtype, Shape(dims), {}};
}

struct BatchNode final : Node {
  NodePtr input;
  std::int64_t size;
  bool drop;
  bool padded;
  std::vector<Shape> pad_shapes;
  std::vector<double> pad_values;
  BatchNode(ElementSpec s, NodePtr in, std::int64_t n, bool d, bool p, std::vector<Shape> shapes, std::vector<double> values)
      : Node(std::move(s)), input(std::move(in)), size(n), drop(d), padded(p), pad_shapes(std::move(shapes)),
        pad_values(std::move(values)) {}
  std::int64_t cardinality() const override {
    std::int64_t n = input->cardinality();
    if (n < 0) return n;
    return drop ? n / size : n / size + (n % size != 0);
  }
  std::unique_ptr<IteratorImpl> iterate() const override;
};

struct BatchIt final : IteratorImpl {
  const BatchNode* node;
  std::unique_ptr<IteratorImpl> in;
  const std::vector<Tensor>* slices = nullptr;  // a from_tensor_slices input: rows as views
  std::int64_t row = 0, rows = 0;
  std::int64_t index = 0;  // elements consumed
  bool done = false;
  std::vector<Flat> elems;

  bool next(Flat& out) override {
    if (done) return false;
    if (slices) {
      std::int64_t end = std::min(rows, row + node->size);
      if (end == row || (node->drop && end - row < node->size)) return done = true, false;
      out.clear();
      for (const auto& t : *slices) out.push_back(detail::rows_view(t, row, end, false));
      row = end;
      return true;
    }
    elems.clear();
    std::int64_t want = node->size;
    while (static_cast<std::int64_t>(elems.size()) < want) {
      Flat e;
      if (!in->next(e)) {
        done = true;
        break;
      }
      elems.push_back(std::move(e));
    }
    if (elems.empty() || (node->drop && static_cast<std::int64_t>(elems.size()) < want)) return done = true, false;
    out.clear();
    const std::size_t k = node->input->spec.specs.size();
    std::int64_t first = index;
    index += static_cast<std::int64_t>(elems.size());
    for (std::size_t c = 0; c < k; ++c) out.push_back(node->padded ? pad_component(c, first) : stack_component(c, first));
    return true;
  }

  Tensor stack_component(std::size_t c, std::int64_t first) {
    std::vector<const Tensor*> parts;
    for (std::size_t i = 0; i < elems.size(); ++i) {
      const Tensor& t = elems[i][c];
      if (t.shape() != elems[0][c].shape())
        fail_data("batch: element " + std::to_string(first + static_cast<std::int64_t>(i)) + " has component " +
                  std::to_string(c) + " of shape " + t.shape().str() + " but element " + std::to_string(first) + " has " +
                  elems[0][c].shape().str() + "; batch needs equal shapes (padded_batch pads them)");
      parts.push_back(&t);
    }
    return detail::stacked(parts, elems[0][c].spec());
  }

  Tensor pad_component(std::size_t c, std::int64_t first) {
    const int rank = elems[0][c].rank();
    std::vector<std::int64_t> target(static_cast<std::size_t>(rank), 0);
    const Shape* want = node->pad_shapes.empty() ? nullptr : &node->pad_shapes[c];
    for (std::size_t i = 0; i < elems.size(); ++i)
      for (int a = 0; a < rank; ++a) target[static_cast<std::size_t>(a)] = std::max(target[static_cast<std::size_t>(a)], elems[i][c].shape()[a]);
    if (want)
      for (int a = 0; a < rank; ++a) {
        std::int64_t w = (*want)[a];
        if (w == kDynamic) continue;
        if (target[static_cast<std::size_t>(a)] > w)
          fail_data("padded_batch: an element among " + std::to_string(first) + ".." +
                    std::to_string(first + static_cast<std::int64_t>(elems.size()) - 1) + " has component " + std::to_string(c) +
                    " with axis " + std::to_string(a) + " of size " + std::to_string(target[static_cast<std::size_t>(a)]) +
                    ", larger than the padded shape " + want->str());
        target[static_cast<std::size_t>(a)] = w;
      }
    double value = node->pad_values.empty() ? 0.0 : node->pad_values[c];
    std::vector<Tensor> padded;
    padded.reserve(elems.size());
    for (const auto& e : elems) {
      const Tensor& t = e[c];
      std::vector<std::pair<std::int64_t, std::int64_t>> p;
      bool any = false;
      for (int a = 0; a < rank; ++a) {
        p.emplace_back(0, target[static_cast<std::size_t>(a)] - t.shape()[a]);
        any = any || p.back().second != 0;
      }
      padded.push_back(any ? pad(t, p, "constant", value) : t);
    }
    std::vector<const Tensor*> parts;
    for (const auto& t : padded) parts.push_back(&t);
    return detail::stacked(parts, padded[0].spec());
  }
};

std::unique_ptr<IteratorImpl> BatchNode::iterate() const {
  auto it = std::make_unique<BatchIt>();
  it->node = this;
  if (!padded) {
    if (const auto* t = detail::SlicesNode::tensors_of(*input)) {
      it->slices = t;
      it->rows = input->cardinality();
      return it;
    }
  }
  it->in = input->iterate();
  return it;
}

// ---------------------------------------------------------------- repeat, take, skip
struct RepeatNode final : Node {
  NodePtr input;
  std::int64_t count;
  RepeatNode(NodePtr in, std::int64_t c) : Node(in->spec), input(std::move(in)), count(c) {}
  std::int64_t cardinality() const override {
    std::int64_t n = input->cardinality();
    if (count < 0) return n == 0 ? 0 : kInfiniteCardinality;  // tf.data's rule, unknown inputs too
    if (count == 0) return 0;
    if (n < 0) return n;
    return saturating_mul(n, count);
  }
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It final : IteratorImpl {
      const RepeatNode* node;
      std::unique_ptr<IteratorImpl> in;
      std::int64_t pass = 0;
      bool produced = false;
      bool next(Flat& out) override {
        while (node->count < 0 || pass < node->count) {
          if (!in) {
            in = node->input->iterate();
            produced = false;
          }
          if (in->next(out)) {
            produced = true;
            return true;
          }
          if (detail::pass_cancelled()) return false;  // kept: its threads may be stuck, joined later
          in.reset();
          ++pass;
          if (!produced) return false;  // an empty pass: repeating it forever would never yield
        }
        return false;
      }
    };
    auto it = std::make_unique<It>();
    it->node = this;
    return it;
  }
};

struct TakeSkipNode final : Node {
  NodePtr input;
  std::int64_t count;
  bool take;
  TakeSkipNode(NodePtr in, std::int64_t c, bool t) : Node(in->spec), input(std::move(in)), count(c), take(t) {}
  std::int64_t cardinality() const override {
    std::int64_t n = input->cardinality();
    if (take) {
      if (count < 0) return n;
      if (n == kInfiniteCardinality) return count;
      if (n == kUnknownCardinality) return n;
      return std::min(n, count);
    }
    if (n < 0) return n;
    if (count < 0) return 0;
    return std::max<std::int64_t>(0, n - count);
  }
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It final : IteratorImpl {
      const TakeSkipNode* node;
      std::unique_ptr<IteratorImpl> in;
      std::int64_t seen = 0;
      bool next(Flat& out) override {
        if (node->take) {
          if (node->count >= 0 && seen >= node->count) return false;
          if (!in) in = node->input->iterate();
          if (!in->next(out)) return false;
          ++seen;
          return true;
        }
        if (!in) in = node->input->iterate();
        while (node->count < 0 || seen < node->count) {
          if (!in->next(out)) return false;
          ++seen;
        }
        return in->next(out);
      }
    };
    auto it = std::make_unique<It>();
    it->node = this;
    return it;
  }
};

// ---------------------------------------------------------------- zip, enumerate
struct ZipNode final : Node {
  std::vector<NodePtr> inputs;
  ZipNode(ElementSpec s, std::vector<NodePtr> in) : Node(std::move(s)), inputs(std::move(in)) {}
  std::int64_t cardinality() const override {
    bool unknown = false, finite = false;
    std::int64_t m = std::numeric_limits<std::int64_t>::max();
    for (const auto& i : inputs) {
      std::int64_t n = i->cardinality();
      if (n == kUnknownCardinality) unknown = true;
      else if (n >= 0) finite = true, m = std::min(m, n);
    }
    if (finite && m == 0) return 0;
    if (unknown) return kUnknownCardinality;
    return finite ? m : kInfiniteCardinality;
  }
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It final : IteratorImpl {
      std::vector<std::unique_ptr<IteratorImpl>> in;
      Flat part;
      bool done = false;
      bool next(Flat& out) override {
        if (done) return false;
        out.clear();
        for (auto& i : in) {
          if (!i->next(part)) return done = true, false;
          for (auto& t : part) out.push_back(std::move(t));
        }
        return true;
      }
    };
    auto it = std::make_unique<It>();
    for (const auto& i : inputs) it->in.push_back(i->iterate());
    return it;
  }
};

// ---------------------------------------------------------------- interleave
struct InterleaveNode final : Node {
  NodePtr input;
  std::function<Dataset(const Element&)> fn;
  std::int64_t cycle, block;
  InterleaveNode(ElementSpec s, NodePtr in, std::function<Dataset(const Element&)> f, std::int64_t c, std::int64_t b)
      : Node(std::move(s)), input(std::move(in)), fn(std::move(f)), cycle(c), block(b) {}
  std::int64_t cardinality() const override {
    std::int64_t n = input->cardinality();
    return n == 0 ? 0 : (n == kInfiniteCardinality ? n : kUnknownCardinality);
  }
  std::unique_ptr<IteratorImpl> iterate() const override {
    // tf.data's order (InterleaveDatasetOp): a slot yields block_length elements, then the next
    // slot; an empty slot opens the next input element's dataset; an exhausted one closes and
    // the cycle moves on.
    struct It final : IteratorImpl {
      const InterleaveNode* node;
      std::unique_ptr<IteratorImpl> in;
      std::vector<std::pair<NodePtr, std::unique_ptr<IteratorImpl>>> slots;
      std::size_t cur = 0;
      std::int64_t in_block = 0, opened = 0, open = 0;
      bool input_done = false;
      void advance() {
        in_block = 0;
        cur = (cur + 1) % slots.size();
      }
      bool next(Flat& out) override {
        while (!input_done || open > 0) {
          auto& slot = slots[cur];
          if (slot.second) {
            if (slot.second->next(out)) {
              detail::check_element(node->spec, out, "interleave", opened);
              if (++in_block == node->block) advance();
              return true;
            }
            if (detail::pass_cancelled()) return false;  // kept: its threads may be stuck, joined later
            slot.second.reset();
            slot.first.reset();
            --open;
            advance();
          } else if (!input_done) {
            Flat e;
            if (!in->next(e)) {
              input_done = true;
              continue;
            }
            Dataset d;
            try {
              d = node->fn(detail::element_of(node->input->spec, std::move(e)));
            } catch (const std::exception& ex) {
              throw Error(kind_of(ex), detail::with_index("interleave", opened, ex.what()));
            }
            if (!(d.element_spec() == node->spec) && d.node()) {
              bool ok = d.element_spec().specs.size() == node->spec.specs.size();
              for (std::size_t i = 0; ok && i < node->spec.specs.size(); ++i)
                ok = node->spec.specs[i].dtype == d.element_spec().specs[i].dtype &&
                     node->spec.specs[i].shape.rank() == d.element_spec().specs[i].shape.rank();
              if (!ok)
                fail_data("interleave: the dataset for input element " + std::to_string(opened) + " has elements " +
                          d.element_spec().str() + ", the first had " + node->spec.str());
            }
            ++opened;
            if (!d.node()) continue;
            slot.first = d.node();
            slot.second = slot.first->iterate();
            ++open;
          } else {
            advance();
          }
        }
        return false;
      }
    };
    auto it = std::make_unique<It>();
    it->node = this;
    it->in = input->iterate();
    it->slots.resize(static_cast<std::size_t>(cycle));
    return it;
  }
};

}  // namespace

// ---------------------------------------------------------------- Dataset methods
Dataset Dataset::map(MapFn fn, std::int64_t num_parallel_calls, bool deterministic) const {
  if (num_parallel_calls < 0 && num_parallel_calls != kAutotune)
    fail_data("map: num_parallel_calls must be >= 0 or kAutotune, got " + std::to_string(num_parallel_calls));
  if (num_parallel_calls > 1024) fail_data("map: num_parallel_calls " + std::to_string(num_parallel_calls) + " is more than 1024 threads");
  const NodePtr& in = need(node_);
  auto [call, spec] = traced("map", in->spec, std::move(fn));
  std::int64_t threads = num_parallel_calls == kAutotune ? detail::autotune_threads() : num_parallel_calls;
  return Dataset(std::make_shared<MapNode>(std::move(spec), in, std::move(call), threads, deterministic));
}

Dataset Dataset::filter(Predicate predicate) const {
  if (!predicate) fail_data("filter needs a predicate");
  const NodePtr& in = need(node_);
  auto [call, spec] = traced("filter", in->spec, [predicate](const Element& e) { return Element(predicate(e)); });
  // tf.data's rule: a bool scalar (a number is not read as a truth value, so x * 2 is an error,
  // not a filter that keeps every nonzero element).
  if (spec.specs.size() != 1 || spec.specs[0].dtype != DType::bool_ || spec.specs[0].shape.rank() > 1 ||
      (spec.specs[0].shape.rank() == 1 && spec.specs[0].shape[0] != 1))
    fail_data("filter: the predicate must return a bool scalar, got " + spec.str());
  return Dataset(std::make_shared<FilterNode>(in, std::move(call)));
}

Dataset Dataset::shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed, bool reshuffle_each_iteration) const {
  if (buffer_size < 1) fail_data("shuffle: buffer_size must be at least 1, got " + std::to_string(buffer_size));
  return Dataset(std::make_shared<ShuffleNode>(need(node_), buffer_size, seed, reshuffle_each_iteration));
}

Dataset Dataset::batch(std::int64_t batch_size, bool drop_remainder) const {
  if (batch_size < 1) fail_data("batch: batch_size must be at least 1, got " + std::to_string(batch_size));
  const NodePtr& in = need(node_);
  ElementSpec s = in->spec;
  for (auto& c : s.specs) c = batched(c, drop_remainder ? batch_size : kDynamic);
  return Dataset(std::make_shared<BatchNode>(std::move(s), in, batch_size, drop_remainder, false, std::vector<Shape>{}, std::vector<double>{}));
}

Dataset Dataset::padded_batch(std::int64_t batch_size, std::vector<Shape> padded_shapes, std::vector<double> padding_values,
                              bool drop_remainder) const {
  if (batch_size < 1) fail_data("padded_batch: batch_size must be at least 1, got " + std::to_string(batch_size));
  const NodePtr& in = need(node_);
  const auto& comps = in->spec.specs;
  if (!padded_shapes.empty() && padded_shapes.size() != comps.size())
    fail_data("padded_batch: " + std::to_string(padded_shapes.size()) + " padded shapes for an element of " +
              std::to_string(comps.size()) + " components " + in->spec.str());
  if (!padding_values.empty() && padding_values.size() != comps.size())
    fail_data("padded_batch: " + std::to_string(padding_values.size()) + " padding values for an element of " +
              std::to_string(comps.size()) + " components");
  ElementSpec s = in->spec;
  for (std::size_t c = 0; c < comps.size(); ++c) {
    if (comps[c].shape.rank() == 0 && !padded_shapes.empty() && padded_shapes[c].rank() != 0)
      fail_data("padded_batch: component " + std::to_string(c) + " is a scalar; its padded shape must be []");
    std::vector<std::int64_t> dims = comps[c].shape.dims();
    if (!padded_shapes.empty()) {
      const Shape& p = padded_shapes[c];
      if (p.rank() != comps[c].shape.rank())
        fail_data("padded_batch: padded shape " + p.str() + " for component " + std::to_string(c) + " " + comps[c].str() +
                  " has another rank");
      for (int a = 0; a < p.rank(); ++a) {
        if (p[a] < 0 && p[a] != kDynamic) fail_data("padded_batch: negative padded dim in " + p.str());
        if (p[a] != kDynamic && comps[c].shape[a] != kDynamic && comps[c].shape[a] > p[a])
          fail_data("padded_batch: component " + std::to_string(c) + " " + comps[c].str() + " is larger than its padded shape " + p.str());
        dims[static_cast<std::size_t>(a)] = p[a];
      }
    }
    s.specs[c] = batched(TensorSpec{comps[c].dtype, Shape(dims), {}}, drop_remainder ? batch_size : kDynamic);
  }
  return Dataset(std::make_shared<BatchNode>(std::move(s), in, batch_size, drop_remainder, true, std::move(padded_shapes),
                                             std::move(padding_values)));
}

Dataset Dataset::repeat(std::int64_t count) const {
  if (count < -1) fail_data("repeat: count must be >= -1, got " + std::to_string(count));
  return Dataset(std::make_shared<RepeatNode>(need(node_), count));
}

Dataset Dataset::take(std::int64_t count) const {
  if (count < -1) fail_data("take: count must be >= -1, got " + std::to_string(count));
  return Dataset(std::make_shared<TakeSkipNode>(need(node_), count, true));
}

Dataset Dataset::skip(std::int64_t count) const {
  if (count < -1) fail_data("skip: count must be >= -1, got " + std::to_string(count));
  return Dataset(std::make_shared<TakeSkipNode>(need(node_), count, false));
}

Dataset Dataset::zip(const std::vector<Dataset>& datasets) {
  if (datasets.empty()) fail_data("zip needs at least one dataset");
  ElementSpec s{Structure::tuple, {}, {}};
  std::vector<NodePtr> nodes;
  for (const auto& d : datasets) {
    nodes.push_back(need(d.node()));
    for (const auto& c : nodes.back()->spec.specs) s.specs.push_back(c);
  }
  return Dataset(std::make_shared<ZipNode>(std::move(s), std::move(nodes)));
}

Dataset Dataset::enumerate(std::int64_t start) const {
  // The indices are range(start, 2^63 - 1): a dataset longer than that would be cut short.
  std::int64_t n = cardinality();
  if (start > 0 && n > std::numeric_limits<std::int64_t>::max() - start)
    fail_data("enumerate: start " + std::to_string(start) + " with " + std::to_string(n) +
              " elements needs indices past 2^63 - 2, the last an int64 range gives");
  return zip({range(start, std::numeric_limits<std::int64_t>::max()), *this});
}

Dataset Dataset::interleave(std::function<Dataset(const Element&)> fn, std::int64_t cycle_length, std::int64_t block_length) const {
  if (!fn) fail_data("interleave needs a function");
  if (cycle_length == kAutotune) cycle_length = detail::autotune_threads();
  if (cycle_length < 1 || cycle_length > (1 << 20))
    fail_data("interleave: cycle_length must be in [1, 2^20] or kAutotune, got " + std::to_string(cycle_length));
  if (block_length < 1) fail_data("interleave: block_length must be at least 1, got " + std::to_string(block_length));
  const NodePtr& in = need(node_);
  // The element spec: the first input element's dataset's (the function runs once here, as
  // tf.data traces it; later datasets must match its dtypes and ranks).
  Iterator probe = Dataset(in).iterator();
  std::optional<Element> first = probe.next();
  ElementSpec s;
  if (first) {
    Dataset d = fn(*first);
    s = d.element_spec();
    for (auto& c : s.specs) c.shape = Shape(std::vector<std::int64_t>(static_cast<std::size_t>(c.shape.rank()), kDynamic));
  } else {
    s = ElementSpec{Structure::tuple, {}, {}};
  }
  return Dataset(std::make_shared<InterleaveNode>(std::move(s), in, std::move(fn), cycle_length, block_length));
}

}  // namespace ef::data
