// ef::random's parameterized draws and candidate samplers (eagerflow/ops/random_dists.h) as
// _core._random_dists; python/eagerflow/_random_dists.py and _candidate_sampling.py give them
// TF's argument names and seeds.
#include "bindings.h"
#include "convert.h"
#include "eagerflow/ops/random_dists.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace efpy {
namespace {

using ef::Tensor;
using H = nb::handle;

ef::Shape shape_arg(H shape) { return ef::Shape(dims_arg(shape, "shape", /*allow_unknown=*/false)); }
std::optional<std::uint64_t> optional_seed(H seed) {
  if (seed.is_none()) return std::nullopt;
  return seed_arg(seed, "seed");
}
// Numbers and lists become `d`; tensors stay as they are (the op checks their dtype).
Tensor param(H h, ef::DType d) { return to_tensor_as(h, d); }
Tensor optional_param(H h, ef::DType d) { return h.is_none() ? Tensor() : param(h, d); }
nb::tuple sample_tuple(const ef::random::CandidateSample& s) {
  return nb::make_tuple(s.sampled_candidates, s.true_expected_count, s.sampled_expected_count);
}

}  // namespace

void init_random_dists(nb::module_& m) {
  nb::module_ r = m.def_submodule("_random_dists", "tf.random's parameterized draws and candidate samplers");
  namespace rd = ef::random;
  r.def(
      "gamma",
      [](H shape, H alpha, H beta, H dtype, H seed) {
        ef::DType d = dtype_from_py(dtype);
        return rd::gamma(shape_arg(shape), param(alpha, d), optional_param(beta, d), optional_seed(seed));
      },
      nb::arg("shape"), nb::arg("alpha"), nb::arg("beta").none(), nb::arg("dtype"), nb::arg("seed").none());
  r.def(
      "stateless_gamma",
      [](H shape, std::uint64_t seed, H alpha, H beta, H dtype) {
        ef::DType d = dtype_from_py(dtype);
        return rd::stateless_gamma(shape_arg(shape), seed, param(alpha, d), optional_param(beta, d));
      },
      nb::arg("shape"), nb::arg("seed"), nb::arg("alpha"), nb::arg("beta").none(), nb::arg("dtype"));
  r.def(
      "poisson",
      [](H shape, H lam, H dtype, H seed) {
        return rd::poisson(shape_arg(shape), to_tensor(lam), dtype_from_py(dtype), optional_seed(seed));
      },
      nb::arg("shape"), nb::arg("lam"), nb::arg("dtype"), nb::arg("seed").none());
  r.def(
      "stateless_poisson",
      [](H shape, std::uint64_t seed, H lam, H dtype) {
        return rd::stateless_poisson(shape_arg(shape), seed, to_tensor(lam), dtype_from_py(dtype));
      },
      nb::arg("shape"), nb::arg("seed"), nb::arg("lam"), nb::arg("dtype"));
  r.def(
      "stateless_binomial",
      [](H shape, std::uint64_t seed, H counts, H probs, H dtype) {
        Tensor p = to_tensor(probs);
        return rd::stateless_binomial(shape_arg(shape), seed, param(counts, p.dtype()), p, dtype_from_py(dtype));
      },
      nb::arg("shape"), nb::arg("seed"), nb::arg("counts"), nb::arg("probs"), nb::arg("dtype"));
  r.def(
      "stateless_parameterized_truncated_normal",
      [](H shape, std::uint64_t seed, H means, H stddevs, H minvals, H maxvals) {
        Tensor m = to_tensor(means);
        return rd::stateless_parameterized_truncated_normal(shape_arg(shape), seed, m, param(stddevs, m.dtype()),
                                                            param(minvals, m.dtype()), param(maxvals, m.dtype()));
      },
      nb::arg("shape"), nb::arg("seed"), nb::arg("means"), nb::arg("stddevs"), nb::arg("minvals"), nb::arg("maxvals"));
  r.def(
      "random_gamma_grad", [](H alpha, H sample) { return rd::random_gamma_grad(to_tensor(alpha), to_tensor(sample)); },
      nb::arg("alpha"), nb::arg("sample"));

  // kind: uniform, log_uniform, learned_unigram
  r.def(
      "candidate_sampler",
      [](const std::string& kind, H true_classes, std::int64_t num_true, std::int64_t num_sampled, bool unique,
         std::int64_t range_max, H seed) {
        Tensor t = to_tensor(true_classes);
        auto s = optional_seed(seed);
        if (kind == "uniform")
          return sample_tuple(rd::uniform_candidate_sampler(t, num_true, num_sampled, unique, range_max, s));
        if (kind == "log_uniform")
          return sample_tuple(rd::log_uniform_candidate_sampler(t, num_true, num_sampled, unique, range_max, s));
        return sample_tuple(rd::learned_unigram_candidate_sampler(t, num_true, num_sampled, unique, range_max, s));
      },
      nb::arg("kind"), nb::arg("true_classes"), nb::arg("num_true"), nb::arg("num_sampled"), nb::arg("unique"),
      nb::arg("range_max"), nb::arg("seed").none());
  r.def(
      "fixed_unigram_candidate_sampler",
      [](H true_classes, std::int64_t num_true, std::int64_t num_sampled, bool unique, std::int64_t range_max,
         std::vector<double> unigrams, double distortion, std::int64_t num_reserved_ids, std::int64_t num_shards,
         std::int64_t shard, H seed) {
        return sample_tuple(rd::fixed_unigram_candidate_sampler(to_tensor(true_classes), num_true, num_sampled, unique,
                                                                range_max, unigrams, distortion, num_reserved_ids,
                                                                num_shards, shard, optional_seed(seed)));
      },
      nb::arg("true_classes"), nb::arg("num_true"), nb::arg("num_sampled"), nb::arg("unique"), nb::arg("range_max"),
      nb::arg("unigrams"), nb::arg("distortion"), nb::arg("num_reserved_ids"), nb::arg("num_shards"), nb::arg("shard"),
      nb::arg("seed").none());
  r.def(
      "all_candidate_sampler",
      [](H true_classes, std::int64_t num_true, std::int64_t num_sampled, bool unique) {
        return sample_tuple(rd::all_candidate_sampler(to_tensor(true_classes), num_true, num_sampled, unique));
      },
      nb::arg("true_classes"), nb::arg("num_true"), nb::arg("num_sampled"), nb::arg("unique"));
}

}  // namespace efpy
