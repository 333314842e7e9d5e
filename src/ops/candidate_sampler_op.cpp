// TF's candidate samplers (tf.random.*_candidate_sampler) as one op: the draws, then each
// candidate's expected count with TF's formulas (p * num_sampled; with unique = true,
// 1 - (1 - p)^tries over the draws it took to find num_sampled distinct candidates).
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_set>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/random_dists.h"
#include "kernels/cpu/random_samplers.h"
#include "ops/op_factories.h"
#include "ops/random_dists_op.h"

namespace ef {

struct LearnedUnigram {
  explicit LearnedUnigram(std::int64_t n)
      : weight(static_cast<std::size_t>(n), 1), tree(static_cast<std::size_t>(n) + 1, 0), total(n) {
    for (std::size_t i = 1; i < tree.size(); ++i) {  // the Fenwick tree of all ones, in O(n)
      tree[i] += 1;
      std::size_t j = i + (i & (~i + 1));
      if (j < tree.size()) tree[j] += tree[i];
    }
  }
  void add(std::int64_t id, std::int64_t w) {
    weight[static_cast<std::size_t>(id)] += w;
    total += w;
    for (auto i = static_cast<std::size_t>(id) + 1; i < tree.size(); i += i & (~i + 1)) tree[i] += w;
  }
  // The class whose cumulative weight range holds `target` (in [0, total)).
  std::int64_t find(std::int64_t target) const {
    std::size_t pos = 0, n = tree.size() - 1;
    for (std::size_t step = std::bit_floor(n); step; step >>= 1)
      if (pos + step <= n && tree[pos + step] <= target) target -= tree[pos += step];
    return static_cast<std::int64_t>(std::min(pos, n - 1));
  }
  std::mutex mutex;
  std::vector<std::int64_t> weight, tree;
  std::int64_t total;
};

namespace {

constexpr const char* kSamplerNames[] = {"uniform_candidate_sampler", "log_uniform_candidate_sampler",
                                         "learned_unigram_candidate_sampler", "fixed_unigram_candidate_sampler",
                                         "all_candidate_sampler"};

// TF keeps a learned sampler in its kernel, which eager calls with the same attributes share.
std::shared_ptr<LearnedUnigram> learned_state(std::int64_t range, std::int64_t num_true, std::int64_t num_sampled,
                                              bool unique, std::optional<std::uint64_t> seed) {
  static std::mutex mutex;
  static auto* states = new std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, bool, bool, std::uint64_t>,
                                     std::shared_ptr<LearnedUnigram>>;
  std::lock_guard lock(mutex);
  auto& slot = (*states)[{range, num_true, num_sampled, unique, seed.has_value(), seed.value_or(0)}];
  if (!slot) slot = std::make_shared<LearnedUnigram>(range);
  return slot;
}

// TF's expected count, in float as TF computes it.
float expected_count(float p, std::int64_t num_sampled, std::int64_t tries) {
  if (tries == num_sampled) return p * static_cast<float>(num_sampled);
  return -std::expm1(static_cast<float>(tries) * std::log1p(-p));
}

std::string weights_text(const std::vector<double>& cumulative) {
  std::string s;
  double before = 0;
  for (double c : cumulative) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, c - before);
    s.append(buf, r.ptr).push_back(',');
    before = c;
  }
  return s;
}

std::vector<double> weights_from_text(const std::string& s) {
  std::vector<double> w;
  for (std::size_t at = 0; at < s.size();) {
    std::size_t end = s.find(',', at);
    double v = 0;
    std::from_chars(s.data() + at, s.data() + end, v);
    w.push_back(v);
    at = end + 1;
  }
  return w;
}

}  // namespace

CandidateSampler::CandidateSampler(SamplerKind kind, std::int64_t num_true, std::int64_t num_sampled, bool unique,
                                   std::int64_t range_max, std::optional<std::uint64_t> seed,
                                   std::vector<double> weights)
    : kind_(kind), num_true_(num_true), num_sampled_(num_sampled), range_max_(range_max), unique_(unique), seed_(seed) {
  if (num_true < 1) fail(name(), "num_true must be at least 1, got " + std::to_string(num_true));
  if (num_sampled < 1) fail(name(), "num_sampled must be at least 1, got " + std::to_string(num_sampled));
  if (range_max < 1) fail(name(), "range_max must be at least 1, got " + std::to_string(range_max));
  if ((kind == SamplerKind::learned_unigram || kind == SamplerKind::fixed_unigram) &&
      range_max >= std::numeric_limits<std::int32_t>::max())
    fail(name(), "range_max must be less than 2147483647 for unigram samplers, got " + std::to_string(range_max));
  if (kind == SamplerKind::fixed_unigram) {
    if (static_cast<std::int64_t>(weights.size()) != range_max)
      fail(name(), "range_max is " + std::to_string(range_max) +
                       ": it must equal the number of weights (of this shard), " + std::to_string(weights.size()));
    std::int64_t positive = 0;
    double sum = 0;
    auto cumulative = std::make_shared<std::vector<double>>();
    for (double w : weights) {
      if (!(w >= 0) || std::isinf(w)) fail(name(), "unigram weights must be finite and >= 0, got " + std::to_string(w));
      positive += w > 0;
      cumulative->push_back(sum += w);
    }
    if (!(sum > 0)) fail(name(), "the unigram weights sum to 0: nothing can be sampled");
    if (unique && positive < num_sampled)
      fail(name(), "unique = true needs num_sampled (" + std::to_string(num_sampled) +
                       ") classes of weight > 0, there are " + std::to_string(positive));
    cumulative_ = std::move(cumulative);
  }
  if (kind == SamplerKind::learned_unigram) learned_ = learned_state(range_max, num_true, num_sampled, unique, seed);
  if (seed && kind != SamplerKind::all) seeded_draws_ = random::seed_counter(*seed);
}

const char* CandidateSampler::name() const { return kSamplerNames[static_cast<int>(kind_)]; }

OpParams CandidateSampler::parameters() const {
  OpParams p;
  p.add("num_true", num_true_)
      .add("num_sampled", num_sampled_)
      .add("range_max", range_max_)
      .add_flag("unique", unique_);
  if (seed_) p.add("seed", static_cast<std::int64_t>(*seed_));
  if (cumulative_) p.add("weights", weights_text(*cumulative_));
  return p;
}

std::vector<TensorSpec> CandidateSampler::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  const Tensor& t = in[0];
  if (t.dtype() != DType::int64) fail(kWrongType, name(), "true_classes must be int64, got " + t.spec().str());
  if (t.rank() != 2) fail(name(), "true_classes must be a matrix [batch_size, num_true], got " + t.spec().str());
  if (t.shape()[1] != kDynamic && t.shape()[1] != num_true_)
    fail(name(), "true_classes must have num_true = " + std::to_string(num_true_) + " columns, got " + t.spec().str());
  return {{DType::int64, Shape{num_sampled_}, {}},
          {DType::float32, t.shape(), {}},
          {DType::float32, Shape{num_sampled_}, {}}};
}

void CandidateSampler::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs,
                            std::span<Tensor> out) const {
  for (std::size_t i = 0; i < 3; ++i) out[i] = Tensor::empty(specs[i].dtype, specs[i].shape);
  auto truth = in[0].data<std::int64_t>();
  std::int64_t range = kind_ == SamplerKind::all ? num_sampled_ : range_max_;
  for (std::int64_t c : truth)
    if (c < 0 || c >= range)
      fail(name(), "true class " + std::to_string(c) + " is out of range [0, " + std::to_string(range) + ")");
  auto sampled = out[0].mutable_data<std::int64_t>();
  auto true_count = out[1].mutable_data<float>(), sampled_count = out[2].mutable_data<float>();
  if (kind_ == SamplerKind::all) {
    for (std::int64_t i = 0; i < num_sampled_; ++i) sampled[static_cast<std::size_t>(i)] = i;
    std::fill(true_count.begin(), true_count.end(), 1.0f);
    std::fill(sampled_count.begin(), sampled_count.end(), 1.0f);
    return;
  }
  if (unique_ && num_sampled_ > range_max_)
    fail(name(), "unique = true needs num_sampled (" + std::to_string(num_sampled_) + ") <= range_max (" +
                     std::to_string(range_max_) + ")");
  std::unique_lock<std::mutex> lock;
  if (learned_) lock = std::unique_lock(learned_->mutex);
  kernels::Stream s(random::execution_key(seed_, false, seeded_draws_.get()), 0);
  const double log_range = std::log1p(static_cast<double>(range_max_));
  auto draw = [&]() -> std::int64_t {
    double u = s.uniform();
    switch (kind_) {
      case SamplerKind::uniform:
        return std::min(static_cast<std::int64_t>(u * static_cast<double>(range_max_)), range_max_ - 1);
      case SamplerKind::log_uniform: return (static_cast<std::int64_t>(std::exp(u * log_range)) - 1) % range_max_;
      case SamplerKind::learned_unigram:
        return learned_->find(static_cast<std::int64_t>(u * static_cast<double>(learned_->total)));
      case SamplerKind::fixed_unigram: {
        const std::vector<double>& c = *cumulative_;
        auto at = std::upper_bound(c.begin(), c.end(), u * c.back()) - c.begin();
        return std::min<std::int64_t>(at, range_max_ - 1);
      }
      case SamplerKind::all: break;
    }
    return 0;
  };
  auto probability = [&](std::int64_t v) -> float {
    switch (kind_) {
      case SamplerKind::uniform: return static_cast<float>(1.0 / static_cast<double>(range_max_));
      case SamplerKind::log_uniform: return static_cast<float>(std::log((v + 2.0) / (v + 1.0)) / log_range);
      case SamplerKind::learned_unigram:
        return static_cast<float>(learned_->weight[static_cast<std::size_t>(v)]) / static_cast<float>(learned_->total);
      case SamplerKind::fixed_unigram: {
        const std::vector<double>& c = *cumulative_;
        auto i = static_cast<std::size_t>(v);
        return static_cast<float>((c[i] - (i ? c[i - 1] : 0.0)) / c.back());
      }
      case SamplerKind::all: break;
    }
    return 1.0f;
  };
  std::int64_t tries = 0;
  if (unique_) {
    std::unordered_set<std::int64_t> seen;
    for (std::int64_t picked = 0; picked < num_sampled_;) {
      if (++tries == std::numeric_limits<std::int32_t>::max())
        fail(name(), "gave up after 2^31 draws without finding enough distinct candidates");
      std::int64_t v = draw();
      if (seen.insert(v).second) sampled[static_cast<std::size_t>(picked++)] = v;
    }
  } else {
    for (auto& v : sampled) v = draw();
    tries = num_sampled_;
  }
  for (std::size_t i = 0; i < sampled.size(); ++i)
    sampled_count[i] = expected_count(probability(sampled[i]), num_sampled_, tries);
  for (std::size_t i = 0; i < truth.size(); ++i)
    true_count[i] = expected_count(probability(truth[i]), num_sampled_, tries);
  if (learned_)  // learns from this batch's true classes after drawing (as TF's)
    for (std::int64_t c : truth)
      if (learned_->total < std::numeric_limits<std::int32_t>::max()) learned_->add(c, 1);
}

void detail::add_candidate_sampler_factories(detail::OpFactories& f) {
  for (SamplerKind k : {SamplerKind::uniform, SamplerKind::log_uniform, SamplerKind::learned_unigram,
                        SamplerKind::fixed_unigram, SamplerKind::all})
    f[kSamplerNames[static_cast<int>(k)]] = [k](const OpParams& p) {
      std::optional<std::uint64_t> seed;
      if (p.has("seed")) seed = static_cast<std::uint64_t>(p.integer("seed"));
      std::vector<double> weights = p.has("weights") ? weights_from_text(p.text("weights")) : std::vector<double>{};
      return std::make_shared<CandidateSampler>(k, p.integer("num_true"), p.integer("num_sampled"), p.flag("unique"),
                                                p.integer("range_max"), seed, std::move(weights));
    };
}

}  // namespace ef

namespace ef::random {
namespace {

CandidateSample run(const CandidateSampler& op, const Tensor& true_classes) {
  if (!true_classes.defined()) fail(op.name(), "true_classes is undefined (default-constructed)");
  std::vector<Tensor> r = dispatch(op, std::span<const Tensor>(&true_classes, 1));
  return {r[0], r[1], r[2]};
}

}  // namespace

CandidateSample uniform_candidate_sampler(const Tensor& true_classes, std::int64_t num_true, std::int64_t num_sampled,
                                          bool unique, std::int64_t range_max, std::optional<std::uint64_t> seed) {
  return run(CandidateSampler(SamplerKind::uniform, num_true, num_sampled, unique, range_max, seed), true_classes);
}

CandidateSample log_uniform_candidate_sampler(const Tensor& true_classes, std::int64_t num_true,
                                              std::int64_t num_sampled, bool unique, std::int64_t range_max,
                                              std::optional<std::uint64_t> seed) {
  return run(CandidateSampler(SamplerKind::log_uniform, num_true, num_sampled, unique, range_max, seed), true_classes);
}

CandidateSample learned_unigram_candidate_sampler(const Tensor& true_classes, std::int64_t num_true,
                                                  std::int64_t num_sampled, bool unique, std::int64_t range_max,
                                                  std::optional<std::uint64_t> seed) {
  return run(CandidateSampler(SamplerKind::learned_unigram, num_true, num_sampled, unique, range_max, seed),
             true_classes);
}

CandidateSample fixed_unigram_candidate_sampler(const Tensor& true_classes, std::int64_t num_true,
                                                std::int64_t num_sampled, bool unique, std::int64_t range_max,
                                                const std::vector<double>& unigrams, double distortion,
                                                std::int64_t num_reserved_ids, std::int64_t num_shards,
                                                std::int64_t shard, std::optional<std::uint64_t> seed) {
  const char* op = "fixed_unigram_candidate_sampler";
  if (unigrams.empty()) fail(op, "needs the unigrams (one weight per id after the reserved ones)");
  if (num_shards < 1 || shard < 0 || shard >= num_shards)
    fail(op, "needs 0 <= shard < num_shards, got shard " + std::to_string(shard) + " of " + std::to_string(num_shards));
  if (num_reserved_ids < 0) fail(op, "num_reserved_ids must be >= 0, got " + std::to_string(num_reserved_ids));
  // This shard's ids (id % num_shards == shard) in order: the reserved ones weigh 0. As TF's,
  // the unigrams' ids continue from the count of this shard's reserved ids (not from
  // num_reserved_ids: the two differ when there are several shards).
  std::vector<double> weights;
  for (std::int64_t id = 0; id < num_reserved_ids; ++id)
    if (id % num_shards == shard) weights.push_back(0.0);
  auto id = static_cast<std::int64_t>(weights.size());
  for (double w : unigrams) {
    if (id % num_shards == shard) weights.push_back(std::pow(static_cast<double>(static_cast<float>(w)), distortion));
    ++id;
  }
  return run(
      CandidateSampler(SamplerKind::fixed_unigram, num_true, num_sampled, unique, range_max, seed, std::move(weights)),
      true_classes);
}

CandidateSample all_candidate_sampler(const Tensor& true_classes, std::int64_t num_true, std::int64_t num_sampled,
                                      bool unique) {
  return run(CandidateSampler(SamplerKind::all, num_true, num_sampled, unique, num_sampled, std::nullopt),
             true_classes);
}

}  // namespace ef::random
