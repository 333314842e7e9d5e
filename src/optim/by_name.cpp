// Optimizers by Keras name (compile("adam", ...)) and by class name with saved arguments
// (model files), with Keras' default arguments.
#include <algorithm>
#include <cctype>
#include <functional>
#include <typeinfo>

#include "eagerflow/optim/keras_optimizers.h"

namespace ef::optim {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Reads hyperparameters by name, with defaults; every given one must be read.
class Args {
 public:
  Args(std::string where, const std::map<std::string, double>& given) : where_(std::move(where)), given_(given) {}
  double operator()(const std::string& key, double fallback) {
    read_.push_back(key);
    auto it = given_.find(key);
    return it == given_.end() ? fallback : it->second;
  }
  void check_all_read() const {
    for (const auto& [key, v] : given_)
      if (std::find(read_.begin(), read_.end(), key) == read_.end()) fail(where_, "unknown argument '" + key + "'");
  }

 private:
  std::string where_;
  const std::map<std::string, double>& given_;
  std::vector<std::string> read_;
};

using Maker = std::function<std::shared_ptr<Optimizer>(const LearningRate&, Args&, const ClipOptions&)>;

// Keras' class names, each with its default learning rate when made by name.
const std::vector<std::pair<std::string, std::pair<double, Maker>>>& makers() {
  static const std::vector<std::pair<std::string, std::pair<double, Maker>>> table = {
      {"SGD", {0.01, [](auto& lr, Args& a, auto& c) { return std::make_shared<SGD>(lr, a("momentum", 0.0), a("nesterov", 0.0) != 0.0, c); }}},
      {"Adam", {0.001, [](auto& lr, Args& a, auto& c) {
         return std::make_shared<Adam>(lr, a("beta_1", 0.9), a("beta_2", 0.999), a("epsilon", 1e-7), c);
       }}},
      {"AdamW", {0.001, [](auto& lr, Args& a, auto& c) {
         return std::make_shared<AdamW>(lr, a("weight_decay", 0.004), a("beta_1", 0.9), a("beta_2", 0.999), a("epsilon", 1e-7), c);
       }}},
      {"RMSprop", {0.001, [](auto& lr, Args& a, auto& c) {
         return std::make_shared<RMSprop>(lr, a("rho", 0.9), a("momentum", 0.0), a("epsilon", 1e-7), c);
       }}},
      {"Adagrad", {0.001, [](auto& lr, Args& a, auto& c) {
         return std::make_shared<Adagrad>(lr, a("initial_accumulator_value", 0.1), a("epsilon", 1e-7), c);
       }}},
      {"Adadelta", {0.001, [](auto& lr, Args& a, auto& c) { return std::make_shared<Adadelta>(lr, a("rho", 0.95), a("epsilon", 1e-7), c); }}},
      {"Adamax", {0.001, [](auto& lr, Args& a, auto& c) {
         return std::make_shared<Adamax>(lr, a("beta_1", 0.9), a("beta_2", 0.999), a("epsilon", 1e-7), c);
       }}},
      {"Nadam", {0.001, [](auto& lr, Args& a, auto& c) {
         return std::make_shared<Nadam>(lr, a("beta_1", 0.9), a("beta_2", 0.999), a("epsilon", 1e-7), c);
       }}},
      {"Ftrl", {0.001, [](auto& lr, Args& a, auto& c) {
         return std::make_shared<Ftrl>(lr, a("learning_rate_power", -0.5), a("initial_accumulator_value", 0.1),
                                       a("l1_regularization_strength", 0.0), a("l2_regularization_strength", 0.0),
                                       a("l2_shrinkage_regularization_strength", 0.0), a("beta", 0.0), c);
       }}},
      {"Lion", {0.001, [](auto& lr, Args& a, auto& c) { return std::make_shared<Lion>(lr, a("beta_1", 0.9), a("beta_2", 0.99), c); }}},
      {"Lamb", {0.001, [](auto& lr, Args& a, auto& c) {
         return std::make_shared<Lamb>(lr, a("beta_1", 0.9), a("beta_2", 0.999), a("epsilon", 1e-7), c);
       }}},
      {"Adafactor", {0.001, [](auto& lr, Args& a, auto& c) {
         return std::make_shared<Adafactor>(lr, a("beta_2_decay", -0.8), a("epsilon_1", 1e-30), a("epsilon_2", 1e-3),
                                            a("clip_threshold", 1.0), a("relative_step", 1.0) != 0.0, c);
       }}},
      {"Muon", {0.001, [](auto& lr, Args& a, auto& c) {
         Muon::Options o;
         o.adam_beta_1 = a("adam_beta_1", o.adam_beta_1);
         o.adam_beta_2 = a("adam_beta_2", o.adam_beta_2);
         o.adam_weight_decay = a("adam_weight_decay", o.adam_weight_decay);
         o.epsilon = a("epsilon", o.epsilon);
         o.weight_decay = a("weight_decay", o.weight_decay);
         o.exclude_embeddings = a("exclude_embeddings", 1.0) != 0.0;
         o.muon_a = a("muon_a", o.muon_a);
         o.muon_b = a("muon_b", o.muon_b);
         o.muon_c = a("muon_c", o.muon_c);
         o.adam_lr_ratio = a("adam_lr_ratio", o.adam_lr_ratio);
         o.momentum = a("momentum", o.momentum);
         o.ns_steps = static_cast<std::int64_t>(a("ns_steps", 5.0));
         o.nesterov = a("nesterov", 1.0) != 0.0;
         double rms = a("rms_rate", 0.2);  // -1 saves rms_rate=None
         o.rms_rate = rms < 0 ? std::nullopt : std::optional<double>(rms);
         return std::make_shared<Muon>(lr, o, c);
       }}},
      {"ScheduleFreeAdamW", {0.0025, [](auto& lr, Args& a, auto& c) {
         return std::make_shared<ScheduleFreeAdamW>(lr, a("beta_1", 0.9), a("beta_2", 0.999), a("epsilon", 1e-8),
                                                    static_cast<std::int64_t>(a("warmup_steps", 0.0)), c);
       }}},
  };
  return table;
}

std::string known_names() {
  std::string out;
  for (const auto& [name, entry] : makers()) out += (out.empty() ? "" : ", ") + lower(name);
  return out;
}

}  // namespace

std::string keras_class_name(const Optimizer& optimizer) {
  const std::type_info& t = typeid(optimizer);
  static const std::vector<std::pair<const std::type_info*, const char*>> classes = {
      {&typeid(SGD), "SGD"},         {&typeid(Adam), "Adam"},         {&typeid(AdamW), "AdamW"},
      {&typeid(RMSprop), "RMSprop"}, {&typeid(Adagrad), "Adagrad"},   {&typeid(Adadelta), "Adadelta"},
      {&typeid(Adamax), "Adamax"},   {&typeid(Nadam), "Nadam"},       {&typeid(Ftrl), "Ftrl"},
      {&typeid(Lion), "Lion"},       {&typeid(Lamb), "Lamb"},         {&typeid(Adafactor), "Adafactor"},
      {&typeid(Muon), "Muon"},       {&typeid(ScheduleFreeAdamW), "ScheduleFreeAdamW"},
      {&typeid(LossScaleOptimizer), "LossScaleOptimizer"}};
  for (const auto& [type, name] : classes)
    if (*type == t) return name;
  return "";
}

std::shared_ptr<Optimizer> optimizer_by_name(const std::string& name) {
  std::string key = lower(name);
  for (const auto& [cls, entry] : makers())
    if (lower(cls) == key) {
      std::map<std::string, double> none;
      Args args("optimizer '" + name + "'", none);
      return entry.second(LearningRate(entry.first), args, {});
    }
  fail("optimizer", "unknown optimizer '" + name + "' (known: " + known_names() + ")");
}

std::shared_ptr<Optimizer> make_optimizer(const std::string& class_name, LearningRate learning_rate,
                                          const std::map<std::string, double>& hyperparameters, ClipOptions clip) {
  // Keras' base arguments among the saved ones go to the options (AdamW's and Muon's
  // weight_decay are their own).
  std::map<std::string, double> own = hyperparameters;
  auto take = [&](const char* key) -> std::optional<double> {
    auto it = own.find(key);
    if (it == own.end()) return std::nullopt;
    double v = it->second;
    own.erase(it);
    return v;
  };
  if (class_name != "AdamW" && class_name != "Muon")
    if (auto wd = take("weight_decay")) clip.weight_decay = *wd;
  if (auto ema = take("use_ema")) clip.use_ema = *ema != 0.0;
  if (auto m = take("ema_momentum")) clip.ema_momentum = *m;
  if (auto f = take("ema_overwrite_frequency")) clip.ema_overwrite_frequency = static_cast<std::int64_t>(*f);
  for (const auto& [cls, entry] : makers())
    if (cls == class_name) {
      Args args("optimizer " + class_name, own);
      auto opt = entry.second(learning_rate, args, clip);
      args.check_all_read();
      return opt;
    }
  fail("optimizer", "unknown optimizer class '" + class_name + "' (known: " + known_names() + ")");
}

}  // namespace ef::optim
