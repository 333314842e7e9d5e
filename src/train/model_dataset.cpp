// fit, evaluate and predict from an ef::data::Dataset (the loops are model.cpp's fit_batches /
// evaluate_batches; this file turns a dataset's elements into batches).
#include <iostream>

#include "eagerflow/data/dataset.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/train/distribution.h"
#include "eagerflow/train/interrupt.h"
#include "train/batch_source.h"

namespace ef::train {

ValidationData::ValidationData(const data::Dataset& batches) : dataset(std::make_shared<const data::Dataset>(batches)) {}

namespace detail {

DatasetBatches::DatasetBatches(Model& model, const data::Dataset& dataset, std::int64_t steps, const char* what, bool need_y,
                               const std::map<std::int64_t, double>* class_weight)
    : model_(model), dataset_(dataset), steps_(steps), what_(what), need_y_(need_y), class_weight_(class_weight) {
  if (steps_ == 0 || steps_ < -1)
    fail(model.name(), std::string(what) + ": the number of steps must be positive or -1 (a whole pass), got " + std::to_string(steps_));
  if (steps_ < 0 && dataset.cardinality() == data::kInfiniteCardinality)
    fail(model.name(), std::string(what) + ": the dataset is infinite (repeat()): give the number of steps per epoch");
}

std::int64_t DatasetBatches::steps() const {
  if (steps_ > 0) return steps_;
  std::int64_t n = dataset_.cardinality();
  return n >= 0 ? n : -1;
}

void DatasetBatches::begin_epoch() {
  taken_ = 0;
  // A whole pass each epoch; with a number of steps (Keras' steps_per_epoch) fit's iterator
  // carries on where the last epoch stopped, and validation starts a pass each time.
  if (steps_ < 0 || !it_ || std::string_view(what_) != "fit") it_ = dataset_.iterator();
}

bool DatasetBatches::next(StepData& batch) {
  if (steps_ > 0 && taken_ >= steps_) return false;
  if (!it_) it_ = dataset_.iterator();
  std::optional<data::Element> e = it_->next();
  if (!e) {
    it_.reset();
    if (steps_ > 0) exhausted_ = true;
    return false;
  }
  ++taken_;
  Data x, y, sw;
  const std::string& model = model_.name();
  auto spec_text = [&] { return dataset_.element_spec().str(); };
  switch (e->structure()) {
    case data::Structure::tensor:
      x = Data(e->tensor());
      break;
    case data::Structure::tuple:
      if (e->size() < 1 || e->size() > 3)
        fail(model, std::string(what_) + ": dataset elements must be x, (x, y) or (x, y, sample_weight); got " + spec_text());
      x = Data(e->values()[0]);
      if (e->size() >= 2) y = Data(e->values()[1]);
      if (e->size() == 3) sw = Data(e->values()[2]);
      break;
    case data::Structure::map: {
      std::vector<std::string> ins = model_.input_names(), outs = model_.output_names();
      std::map<std::string, Tensor> xs, ys;
      for (std::size_t i = 0; i < e->size(); ++i) {
        const std::string& k = e->keys()[i];
        if (std::find(ins.begin(), ins.end(), k) != ins.end()) xs[k] = e->values()[i];
        else if (std::find(outs.begin(), outs.end(), k) != outs.end()) ys[k] = e->values()[i];
        else
          fail(model, std::string(what_) + ": the dataset's key '" + k + "' names no input or output of the model " + spec_text());
      }
      x = Data(xs);
      if (!ys.empty()) y = Data(ys);
      break;
    }
  }
  if (need_y_ && y.empty())
    fail(model, std::string(what_) + ": dataset elements need targets: (x, y) or (x, y, sample_weight); got " + spec_text());
  if (!need_y_) y = Data();
  batch = model_.conform(what_, x, y, sw, need_y_);
  if (batch.x[0].dim(0) == 0) fail(model, std::string(what_) + ": the dataset gave an empty batch " + batch.x[0].spec().str());
  (void)class_weight_;
  return true;
}

}  // namespace detail

History Model::fit(const data::Dataset& dataset, const FitOptions& o) {
  if (!distribution_) return fit_dataset(dataset, o);
  try {
    begin_distributed_fit(Data());  // the model must be built already
    return fit_dataset(dataset, o);
  } catch (const std::exception& e) {
    distribution_->on_fit_error(e);  // DataParallel ends the job here (MPI_Abort)
    throw;
  }
}

History Model::fit_dataset(const data::Dataset& dataset, const FitOptions& o) {
  require_compiled("fit");
  if (!o.class_weight.empty())
    fail(name(), "fit(dataset): give per-example weights as the elements' third part (x, y, sample_weight) instead of class_weight");
  if (!o.sample_weight.empty())
    fail(name(), "fit(dataset) takes sample weights from the elements (x, y, sample_weight), not from FitOptions::sample_weight");
  if (o.validation_split > 0)
    fail(name(), "validation_split is not supported with a dataset (as Keras): give validation_data");
  if (o.epochs < 0) fail(name(), "epochs must be >= 0");
  detail::DatasetBatches train(*this, dataset, o.steps_per_epoch, "fit", true);
  std::optional<detail::DatasetBatches> val_dataset;
  std::optional<detail::ArrayBatches> val_arrays;
  detail::BatchSource* val = nullptr;
  if (o.validation_data) {
    if (o.validation_data->dataset) {
      val = &val_dataset.emplace(*this, *o.validation_data->dataset, o.validation_steps, "validation_data", true);
    } else {
      StepData v = conform("validation_data", o.validation_data->x, o.validation_data->y, o.validation_data->sample_weight, true);
      if (v.x[0].dim(0) == 0) fail(name(), "validation_data has no examples");
      std::int64_t n = v.x[0].dim(0);
      val = &val_arrays.emplace(std::move(v), std::max<std::int64_t>(1, std::min<std::int64_t>(o.batch_size, n)), false);
    }
  }
  return fit_batches(train, val, o);
}

Logs Model::evaluate(const data::Dataset& dataset, int verbose, std::int64_t steps) {
  EvaluateOptions o;
  o.verbose = verbose;
  o.steps = steps;
  return evaluate(dataset, o);
}

Logs Model::evaluate(const data::Dataset& dataset, const EvaluateOptions& o) {
  require_compiled("evaluate");
  detail::DatasetBatches source(*this, dataset, o.steps, "evaluate", true);
  return evaluate_batches(source, o.verbose, o.callbacks);
}

std::vector<Tensor> Model::predict_outputs(const data::Dataset& dataset, std::int64_t steps) {
  detail::DatasetBatches source(*this, dataset, steps, "predict", false);
  source.begin_epoch();
  std::vector<std::vector<Tensor>> parts;
  StepData batch;
  while (source.next(batch)) {
    if (!parts.empty()) check_interrupt();  // Ctrl-C stops between batches
    Data x(batch.x);
    parts.push_back(predict_outputs(x, std::numeric_limits<std::int64_t>::max()));
  }
  if (parts.empty()) fail(name(), "predict got no batches from the dataset");
  std::vector<Tensor> outs;
  for (std::size_t o = 0; o < parts[0].size(); ++o) {
    std::vector<Tensor> pieces;
    for (const auto& p : parts) pieces.push_back(p[o]);
    outs.push_back(pieces.size() == 1 ? pieces[0] : concat(pieces, 0));
  }
  return outs;
}

Tensor Model::predict(const data::Dataset& dataset, std::int64_t steps) {
  std::vector<Tensor> outs = predict_outputs(dataset, steps);
  if (outs.size() != 1) fail(name(), "has " + std::to_string(outs.size()) + " outputs; predict_outputs(dataset) returns all of them");
  return outs[0];
}

}  // namespace ef::train
