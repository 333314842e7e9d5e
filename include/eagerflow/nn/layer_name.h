#pragma once
// Layer names that Keras refuses too: '/' (it separates the parts of weight paths) and control
// characters (NUL, newlines, escape, DEL). Empty is allowed: a default name is made. Every
// Layer constructor checks its name (configs and JSON included); Python raises ValueError.
#include <string>

#include "eagerflow/core/error.h"

namespace ef::nn {

class InvalidLayerName : public Error {
 public:
  using Error::Error;
};

// Throws InvalidLayerName naming the name (control bytes as \xNN) and what is wrong.
void check_layer_name(const std::string& name);

}  // namespace ef::nn
