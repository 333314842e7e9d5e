// Elements, specs, iterators and the Dataset handle (sources: dataset_sources.cpp;
// transformations: dataset_transform.cpp; threads: dataset_threads.cpp).
#include "eagerflow/data/dataset.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "data/dataset_internal.h"

namespace ef::data {
namespace detail {

void fail_data(const std::string& message) { fail("data", message); }
void fail_data(ErrorKind kind, const std::string& message) { fail(kind, "data", message); }

bool fits(const TensorSpec& spec, const Tensor& t) {
  if (!t.defined() || t.dtype() != spec.dtype || t.rank() != spec.shape.rank()) return false;
  for (int a = 0; a < t.rank(); ++a)
    if (spec.shape[a] != kDynamic && spec.shape[a] != t.shape()[a]) return false;
  return true;
}

ElementSpec spec_of(const Element& e) {
  ElementSpec s;
  s.structure = e.structure();
  s.keys = e.keys();
  for (const auto& t : e.values()) {
    if (!t.defined()) fail_data("an element holds an undefined tensor");
    s.specs.push_back(t.spec());
  }
  return s;
}

void check_element(const ElementSpec& spec, const Flat& flat, const std::string& what, std::int64_t index) {
  bool ok = flat.size() == spec.specs.size();
  for (std::size_t i = 0; ok && i < flat.size(); ++i) ok = fits(spec.specs[i], flat[i]);
  if (ok) return;
  std::string got;
  if (flat.size() == 1 && flat[0].defined()) {
    got = flat[0].spec().str();
  } else {
    got = "(";
    for (std::size_t i = 0; i < flat.size(); ++i)
      got += (i ? ", " : "") + (flat[i].defined() ? flat[i].spec().str() : std::string("undefined"));
    got += ")";
  }
  fail_data(what + ": element " + std::to_string(index) + " is " + got + ", which does not match the element spec " +
            spec.str());
}

Element element_of(const ElementSpec& spec, Flat flat) { return Element(spec.structure, spec.keys, std::move(flat)); }

TensorSpec relaxed(const TensorSpec& a, const TensorSpec& b) {
  std::vector<std::int64_t> dims = a.shape.dims();
  for (int i = 0; i < a.shape.rank(); ++i)
    if (a.shape[i] != b.shape[i]) dims[static_cast<std::size_t>(i)] = kDynamic;
  return {a.dtype, Shape(dims), {}};
}

std::string with_index(const std::string& what, std::int64_t index, const std::string& message) {
  return "[data] " + what + " failed on element " + std::to_string(index) + ": " + message;
}

std::int64_t autotune_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return std::clamp<std::int64_t>(n == 0 ? 2 : static_cast<std::int64_t>(n), 1, 16);
}

namespace {
std::atomic<std::int64_t> g_threads{0};
thread_local std::shared_ptr<CancelGroup> t_group;
}  // namespace

void CancelGroup::add(Cancellable* member) {
  std::lock_guard lk(mu_);
  members_.push_back(member);
  if (cancelled()) member->cancel();
}

void CancelGroup::remove(Cancellable* member) {
  std::lock_guard lk(mu_);
  std::erase(members_, member);
}

void CancelGroup::cancel() {
  std::lock_guard lk(mu_);  // members leave under it: none is destroyed while it is told
  cancelled_.store(true, std::memory_order_release);
  for (Cancellable* m : members_) m->cancel();
}

const std::shared_ptr<CancelGroup>& current_cancel_group() { return t_group; }
bool pass_cancelled() { return t_group && t_group->cancelled(); }
CancelGroupScope::CancelGroupScope(std::shared_ptr<CancelGroup> group) : saved_(std::move(t_group)) {
  t_group = std::move(group);
}
CancelGroupScope::~CancelGroupScope() { t_group = std::move(saved_); }
std::int64_t live_pipeline_threads() { return g_threads.load(); }
void note_thread(int delta) { g_threads.fetch_add(delta); }

}  // namespace detail

using detail::fail_data;

// ---------------------------------------------------------------- ElementSpec, Element
std::string ElementSpec::str() const {
  if (structure == Structure::tensor && specs.size() == 1) return specs[0].str();
  std::string s = structure == Structure::map ? "{" : "(";
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (i) s += ", ";
    if (structure == Structure::map) s += keys[i] + ": ";
    s += specs[i].str();
  }
  return s + (structure == Structure::map ? "}" : ")");
}

Element::Element(Tensor t) : structure_(Structure::tensor), values_{std::move(t)} {}
Element::Element(std::vector<Tensor> tuple) : structure_(Structure::tuple), values_(std::move(tuple)) {}
Element::Element(std::initializer_list<Tensor> tuple) : structure_(Structure::tuple), values_(tuple) {}
Element::Element(const std::map<std::string, Tensor>& map) : structure_(Structure::map) {
  for (const auto& [k, v] : map) {
    keys_.push_back(k);
    values_.push_back(v);
  }
}
Element::Element(Structure structure, std::vector<std::string> keys, std::vector<Tensor> values)
    : structure_(structure), keys_(std::move(keys)), values_(std::move(values)) {
  if (structure_ == Structure::map && keys_.size() != values_.size())
    fail_data("a map element needs one key per tensor, got " + std::to_string(keys_.size()) + " keys for " +
              std::to_string(values_.size()) + " tensors");
  if (structure_ == Structure::tensor && values_.size() != 1)
    fail_data("a one-tensor element holds " + std::to_string(values_.size()) + " tensors");
  if (structure_ == Structure::map) {
    std::vector<std::size_t> order(keys_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys_[a] < keys_[b]; });
    std::vector<std::string> k;
    std::vector<Tensor> v;
    for (std::size_t i : order) {
      if (!k.empty() && k.back() == keys_[i]) fail_data("a map element has the key '" + keys_[i] + "' twice");
      k.push_back(keys_[i]);
      v.push_back(values_[i]);
    }
    keys_ = std::move(k);
    values_ = std::move(v);
  }
}

const Tensor& Element::operator[](std::size_t i) const {
  if (i >= values_.size())
    fail_data(ErrorCode::out_of_range, "element index " + std::to_string(i) + " is out of range for an element of " +
                                           std::to_string(values_.size()) + " tensors");
  return values_[i];
}

const Tensor& Element::operator[](const std::string& key) const {
  auto it = std::find(keys_.begin(), keys_.end(), key);
  if (it == keys_.end()) {
    std::string known;
    for (const auto& k : keys_) known += (known.empty() ? "" : ", ") + k;
    fail_data("the element has no key '" + key + "' (keys: " + (known.empty() ? "none" : known) + ")");
  }
  return values_[static_cast<std::size_t>(it - keys_.begin())];
}

const Tensor& Element::tensor() const {
  if (values_.size() != 1 || structure_ != Structure::tensor)
    fail_data("tensor() of an element that is " + std::string(structure_ == Structure::map ? "a map" : "a tuple") + " of " +
              std::to_string(values_.size()) + " tensors; index it instead");
  return values_[0];
}

ElementSpec Element::spec() const { return detail::spec_of(*this); }

// ---------------------------------------------------------------- Iterator
Iterator::Iterator(std::shared_ptr<detail::IteratorImpl> impl, std::shared_ptr<const detail::Node> node)
    : node_(std::move(node)), impl_(std::move(impl)) {}

Iterator::~Iterator() { impl_.reset(); }

Iterator& Iterator::operator=(Iterator&& o) noexcept {
  if (this != &o) {
    impl_.reset();  // this pass's threads end while its nodes are still held
    node_ = std::move(o.node_);
    group_ = std::move(o.group_);
    impl_ = std::move(o.impl_);
    index_ = o.index_;
  }
  return *this;
}

void Iterator::cancel() {
  if (group_) group_->cancel();
}

std::optional<Element> Iterator::next() {
  if (!impl_ || (group_ && group_->cancelled())) return std::nullopt;
  detail::Flat flat;
  bool got;
  {
    detail::CancelGroupScope scope(group_);  // inner passes made now (interleave) join the group
    got = impl_->next(flat);
  }
  if (!got) {
    // The pass is over: its threads end now, unless it was cancelled (from another thread,
    // maybe while a source is stuck): then the destructor joins them, and next() returns at once.
    if (!group_ || !group_->cancelled()) impl_.reset();
    return std::nullopt;
  }
  ++index_;
  return detail::element_of(node_->spec, std::move(flat));
}

Iterator::Position::Position(std::shared_ptr<Iterator> it) : it_(std::move(it)) {
  current_ = it_->next();
  if (!current_) it_.reset();
}

Iterator::Position& Iterator::Position::operator++() {
  current_ = it_ ? it_->next() : std::nullopt;
  if (!current_) it_.reset();
  return *this;
}

// ---------------------------------------------------------------- Dataset
namespace {
struct EmptyNode final : detail::Node {
  EmptyNode() : Node(ElementSpec{Structure::tuple, {}, {}}) {}
  std::int64_t cardinality() const override { return 0; }
  std::unique_ptr<detail::IteratorImpl> iterate() const override {
    struct It final : detail::IteratorImpl {
      bool next(detail::Flat&) override { return false; }
    };
    return std::make_unique<It>();
  }
};
const std::shared_ptr<const detail::Node>& empty_node() {
  static const std::shared_ptr<const detail::Node> node = std::make_shared<EmptyNode>();
  return node;
}
}  // namespace

const ElementSpec& Dataset::element_spec() const { return (node_ ? node_ : empty_node())->spec; }
std::int64_t Dataset::cardinality() const { return (node_ ? node_ : empty_node())->cardinality(); }

Iterator Dataset::iterator() const {
  const auto& node = node_ ? node_ : empty_node();
  auto group = std::make_shared<detail::CancelGroup>();
  detail::CancelGroupScope scope(group);
  Iterator it(std::shared_ptr<detail::IteratorImpl>(node->iterate()), node);
  it.group_ = std::move(group);
  return it;
}

Iterator::Position Dataset::begin() const { return Iterator::Position(std::make_shared<Iterator>(iterator())); }

std::string to_string(const Tensor& bytes) {
  if (bytes.dtype() == DType::string && bytes.rank() == 0) return std::string(bytes.item<std::string_view>());
  if (bytes.dtype() != DType::int32 || bytes.rank() != 1)
    fail_data("to_string takes a string scalar or the int32 [length] bytes of a text element, got " + bytes.spec().str());
  std::string s;
  s.reserve(static_cast<std::size_t>(bytes.dim(0)));
  for (std::int32_t c : bytes.data<std::int32_t>()) s.push_back(static_cast<char>(c));
  return s;
}

}  // namespace ef::data
