// Optimizers by Keras name (compile("adam", ...)), with Keras' default arguments.
#include <algorithm>
#include <cctype>

#include "eagerflow/optim/optimizer.h"

namespace ef::optim {

std::shared_ptr<Optimizer> optimizer_by_name(const std::string& name) {
  std::string key = name;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (key == "sgd") return std::make_shared<SGD>();
  if (key == "adam") return std::make_shared<Adam>();
  if (key == "adamw") return std::make_shared<AdamW>();
  if (key == "rmsprop") return std::make_shared<RMSprop>();
  fail("optimizer", "unknown optimizer '" + name + "' (known: sgd, adam, adamw, rmsprop)");
}

}  // namespace ef::optim
