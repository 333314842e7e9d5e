#include "eagerflow/dist/data_parallel.h"

#include <iostream>
#include <map>

#include "distributed/collectives.h"
#include "eagerflow/dist/dist.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random.h"
#include "eagerflow/optim/optimizer.h"
#include "eagerflow/train/model.h"

namespace ef::dist {

namespace {

// Every rank must hold the same number of things before a collective per thing.
void expect_same_count(const char* what, std::int64_t n) {
  std::vector<std::int64_t> all = all_gather(tensor(std::vector<std::int64_t>{n}), 0).to_vector<std::int64_t>();
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      fail("DataParallel", std::string("the ranks hold different numbers of ") + what + ": rank 0 has " + std::to_string(all[0]) +
                               ", rank " + std::to_string(r) + " has " + std::to_string(all[r]));
}

// Gradients of one dtype, in order, in buckets of at most `bucket_bytes`: one fused
// all-reduce each (BucketAllReduce: packs g * n, sums across ranks with the counts, divides
// by the global count).
std::vector<Tensor> reduce_in_buckets(const std::vector<Tensor>& gradients, const Tensor& count, std::int64_t bucket_bytes) {
  std::map<DType, std::vector<std::size_t>> by_dtype;
  for (std::size_t i = 0; i < gradients.size(); ++i)
    if (gradients[i].defined()) by_dtype[gradients[i].dtype()].push_back(i);
  std::vector<Tensor> out(gradients.size());
  for (const auto& [dtype, index] : by_dtype) {
    std::size_t k = 0;
    while (k < index.size()) {
      std::vector<Tensor> inputs;
      std::vector<std::size_t> which;
      std::int64_t bytes = 0;
      while (k < index.size()) {
        const Tensor& g = gradients[index[k]];
        std::int64_t b = g.num_elements() * static_cast<std::int64_t>(size_of(g.dtype()));
        if (!inputs.empty() && bytes + b > bucket_bytes) break;
        inputs.push_back(g);
        which.push_back(index[k]);
        bytes += b;
        ++k;
      }
      inputs.push_back(count);
      std::vector<Tensor> reduced = dispatch(BucketAllReduce(), inputs);
      for (std::size_t j = 0; j < which.size(); ++j) out[which[j]] = reduced[j];
    }
  }
  return out;
}

}  // namespace

DataParallel::DataParallel(DataParallelOptions options) : options_(options) {
  if (options_.bucket_bytes < 1) fail("DataParallel", "bucket_bytes must be at least 1, got " + std::to_string(options_.bucket_bytes));
  init();
  rank_ = dist::rank();
  world_ = dist::world_size();
}

std::vector<Tensor> DataParallel::reduce_gradients(const std::vector<Tensor>& gradients, const Tensor& local_count) {
  return reduce_in_buckets(gradients, reshape(cast(local_count, DType::float64), Shape{}), options_.bucket_bytes);
}

std::vector<Tensor> DataParallel::average_gradients(const std::vector<Tensor>& gradients) {
  return reduce_in_buckets(gradients, scalar<double>(1.0), options_.bucket_bytes);
}

std::pair<Tensor, Tensor> DataParallel::global_mean(const Tensor& local_mean, const Tensor& local_count) {
  Tensor n = reshape(cast(local_count, DType::float64), Shape{});
  Tensor v = reshape(cast(local_mean, DType::float64), Shape{});
  Tensor weighted = where(n > 0.0, v * n, zeros_like(v));
  Tensor both = all_reduce(stack({weighted, n}, 0), ReduceOp::sum);
  Tensor total = reshape(slice(both, {0}, {1}), Shape{}), count = reshape(slice(both, {1}, {2}), Shape{});
  return {cast(total / count, local_mean.dtype()), cast(count, local_count.dtype())};
}

Tensor DataParallel::gather_rows(const Tensor& t) { return all_gather_rows(t); }

void DataParallel::broadcast_variables(const std::vector<Variable>& variables, int root) {
  expect_same_count("variables", static_cast<std::int64_t>(variables.size()));
  for (const Variable& v : variables) v.assign(broadcast(v.value(), root));
}

void DataParallel::broadcast_model(train::Model& model, int root) {
  broadcast_variables(model.weights(), root);
  if (model.optimizer()) broadcast_variables(model.optimizer()->variables(), root);
  random::GeneratorState s = random::get_global_state();
  std::vector<std::int64_t> sc = broadcast(tensor(std::vector<std::int64_t>{static_cast<std::int64_t>(s.seed),
                                                                              static_cast<std::int64_t>(s.counter)}),
                                           root)
                                     .to_vector<std::int64_t>();
  s.seed = static_cast<std::uint64_t>(sc[0]);
  s.counter = static_cast<std::uint64_t>(sc[1]);
  random::set_global_state(s);
}

void DataParallel::on_fit_begin(train::Model& model) { broadcast_model(model, 0); }

// The non-trainable float weights (BatchNormalization's moving statistics), averaged across
// ranks at the end of each epoch, before the user's callbacks see the model.
void DataParallel::on_epoch_end(train::Model& model) {
  if (!options_.average_non_trainable) return;
  std::vector<Variable> vars;
  for (const Variable& v : model.non_trainable_weights())
    if (is_floating(v.dtype())) vars.push_back(v);
  expect_same_count("non-trainable weights", static_cast<std::int64_t>(vars.size()));
  for (const Variable& v : vars) v.assign(all_reduce(v.value(), ReduceOp::mean));
}

void DataParallel::on_fit_error(const std::exception& e) {
  if (!options_.abort_on_error) return;
  std::cerr << "[dist] rank " << rank_ << " of " << world_ << ": fit failed: " << e.what()
            << "\n[dist] ending every rank of the job (MPI_Abort)" << std::endl;
  abort_job(1);
}

DistributedOptimizer::DistributedOptimizer(std::shared_ptr<optim::Optimizer> optimizer, std::shared_ptr<DataParallel> strategy)
    : optimizer_(std::move(optimizer)), strategy_(std::move(strategy)) {
  if (!optimizer_) fail("DistributedOptimizer", "needs an optimizer");
  if (!strategy_) strategy_ = std::make_shared<DataParallel>();
}

void DistributedOptimizer::apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) {
  optimizer_->apply_gradients(strategy_->average_gradients(gradients), variables);
}

}  // namespace ef::dist
