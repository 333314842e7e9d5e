// tf.summary's API: writers, the default writer, and the summary op (an effect, like
// ef::print) that scalar / histogram / text dispatch, eagerly or into a trace.
#include "eagerflow/summary/summary.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>

#include "eagerflow/core/error.h"
#include "eagerflow/function/concrete_function.h"
#include "eagerflow/ops/primitive.h"
#include "eagerflow/ops/op_rules.h"
#include "summary/event_writer.h"
#include "summary/graph_def.h"
#include "ef_tensorboard.pb.h"

namespace ef::summary {
namespace {

std::mutex& default_mutex() {
  static std::mutex m;
  return m;
}
std::shared_ptr<detail::EventWriter>& default_slot() {
  static std::shared_ptr<detail::EventWriter> w;
  return w;
}
std::mutex& step_mutex() {
  static std::mutex m;
  return m;
}
std::optional<std::int64_t>& step_slot() {
  static std::optional<std::int64_t> s;
  return s;
}

const SummaryWriter& require(const SummaryWriter& w, const char* what) {
  if (!w.valid())
    fail(ErrorCode::failed_precondition, "summary",
         std::string(what) + " of an empty SummaryWriter (made by create_file_writer?)");
  return w;
}

enum class Kind { scalar, histogram, text };
const char* kind_name(Kind k) { return k == Kind::scalar ? "summary.scalar" : k == Kind::histogram ? "summary.histogram" : "summary.text"; }

double read_double(const Tensor& t, std::int64_t i) {
  return dispatch_storage_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return static_cast<double>(t.data<T>()[static_cast<std::size_t>(i)]);
  });
}

// Equal-width buckets between the finite values' min and max (HistogramProto: right edges
// and counts). Non-finite values are left out of every field. Two passes over the values, typed
// once per call: reading each value through a dtype switch cost ~40 ns per value.
template <class T>
void fill_histogram_typed(std::span<const T> values, int buckets, ef_tensorboard::HistogramProto& h) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0, sq = 0;
  std::int64_t count = 0;
  for (T raw : values) {
    const auto v = static_cast<double>(raw);
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    sq += v * v;
    ++count;
  }
  h.set_num(static_cast<double>(count));
  h.set_sum(sum);
  h.set_sum_squares(sq);
  if (count == 0) {
    h.set_min(0);
    h.set_max(0);
    return;
  }
  h.set_min(lo);
  h.set_max(hi);
  if (hi == lo) {  // one bucket around the value, as TF's histogram of a constant
    h.add_bucket_limit(hi);
    h.add_bucket(static_cast<double>(count));
    return;
  }
  // Halves, so that a range wider than the largest double (-1e308 to 1e308) does not overflow.
  const double half_lo = lo / 2, half_range = hi / 2 - half_lo;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(buckets), 0);
  for (T raw : values) {
    const auto v = static_cast<double>(raw);
    if (!std::isfinite(v)) continue;
    auto b = static_cast<std::int64_t>((v / 2 - half_lo) / half_range * buckets);
    b = std::clamp<std::int64_t>(b, 0, buckets - 1);
    ++counts[static_cast<std::size_t>(b)];
  }
  for (int b = 0; b < buckets; ++b) {
    const double f = static_cast<double>(b + 1) / buckets;
    h.add_bucket_limit(b == buckets - 1 ? hi : lo * (1 - f) + hi * f);
    h.add_bucket(static_cast<double>(counts[static_cast<std::size_t>(b)]));
  }
}

void fill_histogram(const Tensor& t, int buckets, ef_tensorboard::HistogramProto& h) {
  dispatch_storage_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    fill_histogram_typed<T>(t.data<T>(), buckets, h);
  });
}

void check_step_tensor(const char* op, const Tensor& s) {
  if (s.shape().is_static() && s.num_elements() != 1)
    fail(op, "the step must be a scalar (one element), got " + s.spec().str());
  if (s.dtype() == DType::bool_) fail(op, "the step must be a number, got " + s.spec().str());
}

class WriteSummary : public PrimitiveBase<WriteSummary> {
 public:
  WriteSummary(Kind kind, std::string tag, std::shared_ptr<detail::EventWriter> writer, std::optional<std::int64_t> step,
               bool has_value, int buckets, std::string text)
      : kind_(kind), tag_(std::move(tag)), writer_(std::move(writer)), step_(step), has_value_(has_value), buckets_(buckets),
        text_(std::move(text)) {}
  const char* name() const override { return kind_name(kind_); }
  std::string attrs() const override {
    std::string s = "tag=\"" + tag_ + "\" logdir=\"" + writer_->logdir() + "\"";
    if (step_) s += " step=" + std::to_string(*step_);
    if (kind_ == Kind::histogram) s += " buckets=" + std::to_string(buckets_);
    return s;
  }
  bool has_effect() const override { return true; }
  bool skip_on_gradient_rerun() const override { return true; }  // a second event for the same step
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    const std::size_t want = (has_value_ ? 1u : 0u) + (step_ ? 0u : 1u);
    if (in.size() != want) fail(name(), "expects " + std::to_string(want) + " inputs, got " + std::to_string(in.size()));
    for (const auto& t : in)
      if (!t.defined()) fail(name(), "'" + tag_ + "': an input tensor is undefined (default-constructed)");
    if (has_value_ && kind_ == Kind::scalar && in[0].shape().is_static() && in[0].num_elements() != 1)
      fail(name(), "'" + tag_ + "' needs a scalar (a tensor of one element), got " + in[0].spec().str());
    if (!step_) check_step_tensor(name(), in.back());
    return {};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor>) const override {
    std::int64_t step;
    if (step_) {
      step = *step_;
    } else {
      const Tensor& s = in.back();
      if (s.num_elements() != 1) fail(name(), "the step must be a scalar (one element), got " + s.spec().str());
      if (s.dtype() == DType::int64) {
        step = s.data<std::int64_t>()[0];
      } else {
        double d = read_double(s, 0);
        if (!std::isfinite(d)) fail(name(), "'" + tag_ + "': the step is not finite (" + std::to_string(d) + ")");
        step = saturate_cast<std::int64_t>(d);
      }
    }
    ef_tensorboard::Event e;
    e.set_step(step);
    auto* v = e.mutable_summary()->add_value();
    v->set_tag(tag_);
    switch (kind_) {
      case Kind::scalar: {
        if (in[0].num_elements() != 1)
          fail(name(), "'" + tag_ + "' needs a scalar (a tensor of one element), got " + in[0].spec().str());
        // TF 1's simple_value and histo values carry no metadata: TensorBoard migrates them to
        // its scalar and histogram plugins itself (data_compat.py).
        v->set_simple_value(static_cast<float>(read_double(in[0], 0)));
        break;
      }
      case Kind::histogram:
        fill_histogram(in[0], buckets_, *v->mutable_histo());
        break;
      case Kind::text: {
        auto* t = v->mutable_tensor();
        t->set_dtype(ef_tensorboard::DT_STRING);
        t->mutable_tensor_shape();  // a scalar string
        t->add_string_val(text_);
        v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
        break;
      }
    }
    writer_->write(e);
  }

 private:
  Kind kind_;
  std::string tag_;
  std::shared_ptr<detail::EventWriter> writer_;
  std::optional<std::int64_t> step_;
  bool has_value_;
  int buckets_;
  std::string text_;
};

// Protocol buffers' string fields must hold UTF-8: TensorBoard's reader rejects the whole event
// otherwise, so a bad tag is refused here rather than written.
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : 9;
    if (n == 9 || (n && c < 0xC2 && n == 1) || i + n >= s.size() + (n ? 0 : 1)) return false;
    std::uint32_t cp = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; k <= n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF))) return false;
    i += n + 1;
  }
  return true;
}

bool write_summary(Kind kind, const std::string& tag, const Tensor* value, const Step& step, int buckets, std::string text) {
  const char* op = kind_name(kind);
  if (tag.empty()) fail(op, "needs a name, got an empty string");
  if (!valid_utf8(tag)) fail(op, "the name must be UTF-8 text (TensorBoard cannot read other bytes in a tag)");
  if (value && !value->defined()) fail(op, "'" + tag + "': the tensor is undefined (default-constructed)");
  std::shared_ptr<detail::EventWriter> writer;
  {
    std::lock_guard lock(default_mutex());
    writer = default_slot();
  }
  if (!writer) return false;
  if (writer->closed())
    fail(ErrorCode::failed_precondition, op,
         "'" + tag + "': the default writer for '" + writer->logdir() + "' is closed");
  std::optional<std::int64_t> static_step;
  std::vector<Tensor> inputs;
  if (value) inputs.push_back(*value);
  if (auto* s = std::get_if<std::int64_t>(&step.value)) {
    static_step = *s;
  } else if (auto* t = std::get_if<Tensor>(&step.value)) {
    if (!t->defined()) fail(op, "'" + tag + "': the step tensor is undefined (default-constructed)");
    inputs.push_back(*t);
  } else {
    static_step = get_step();
    if (!static_step)
      fail(op, "'" + tag + "' has no step: pass step=, or set a default with ef::summary::set_step (as tf.summary.experimental.set_step)");
  }
  dispatch(WriteSummary(kind, tag, std::move(writer), static_step, value != nullptr, buckets, std::move(text)), inputs);
  return true;
}

}  // namespace

const std::string& SummaryWriter::path() const { return require(*this, "path").impl_->path(); }
const std::string& SummaryWriter::logdir() const { return require(*this, "logdir").impl_->logdir(); }
void SummaryWriter::flush() const { require(*this, "flush").impl_->flush(); }
void SummaryWriter::close() const { require(*this, "close").impl_->close(); }
bool SummaryWriter::closed() const { return require(*this, "closed").impl_->closed(); }

void SummaryWriter::write_graph_def(const std::string& serialized, std::int64_t step) const {
  require(*this, "write_graph_def");
  ef_tensorboard::Event e;
  e.set_step(step);
  e.set_graph_def(serialized);
  impl_->write(e);
  impl_->flush();
}

void SummaryWriter::write_graph(const ConcreteFunction& function, std::int64_t step) const {
  write_graph_def(detail::graph_def_bytes(function.traced_graph()), step);
}

SummaryWriter create_file_writer(const std::string& logdir, const WriterOptions& options) {
  auto core = std::make_shared<detail::EventWriter>(logdir, options);
  detail::flush_periodically(core);
  // The handles users (and traced graphs) hold: when the last goes, the file is flushed and
  // closed on that thread, at once, even while the background flusher holds the writer.
  std::shared_ptr<detail::EventWriter> handle(core.get(), [core](detail::EventWriter*) mutable {
    try {
      core->close();
    } catch (...) {
    }
    core.reset();
  });
  return SummaryWriter(std::move(handle));
}

void set_default_writer(const SummaryWriter& writer) {
  std::lock_guard lock(default_mutex());
  default_slot() = writer.impl();
}

SummaryWriter default_writer() {
  std::lock_guard lock(default_mutex());
  return SummaryWriter(default_slot());
}

DefaultWriterScope::DefaultWriterScope(const SummaryWriter& writer) {
  require(writer, "as_default");
  std::lock_guard lock(default_mutex());
  previous_ = default_slot();
  default_slot() = writer.impl();
}

DefaultWriterScope::~DefaultWriterScope() {
  std::lock_guard lock(default_mutex());
  default_slot() = std::static_pointer_cast<detail::EventWriter>(previous_);
}

void set_step(std::optional<std::int64_t> step) {
  std::lock_guard lock(step_mutex());
  step_slot() = step;
}

std::optional<std::int64_t> get_step() {
  std::lock_guard lock(step_mutex());
  return step_slot();
}

bool scalar(const std::string& name, const Tensor& value, const Step& step) {
  return write_summary(Kind::scalar, name, &value, step, 0, {});
}

bool scalar(const std::string& name, double value, const Step& step) {
  Tensor t = ef::scalar<double>(value);
  return write_summary(Kind::scalar, name, &t, step, 0, {});
}

bool histogram(const std::string& name, const Tensor& data, const Step& step, int buckets) {
  if (buckets < 1 || buckets > 1000000)
    fail("summary.histogram", "'" + name + "': buckets must be in [1, 1000000], got " + std::to_string(buckets));
  return write_summary(Kind::histogram, name, &data, step, buckets, {});
}

bool text(const std::string& name, const std::string& data, const Step& step) {
  return write_summary(Kind::text, name, nullptr, step, 0, data);
}

namespace {
const bool summary_rules_registered = register_op_rules<WriteSummary>(
    {.runs_per_example = true, .onnx_unsupported = "summaries are effects; exported graphs compute only"});
}  // namespace

}  // namespace ef::summary
