#pragma once
// MNIST in its real format: IDX files, gzip-compressed (the files of the MNIST distribution).
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::data {

struct Digits {
  Tensor images;  // float32 [n, 28, 28] in [0, 1]
  Tensor labels;  // int64 [n], 0..9
};

// Reads an IDX image file and an IDX label file (gzip or plain). A missing, truncated or
// wrong file is an ef::Error that names the file and what is wrong.
Digits load_idx(const std::string& images_path, const std::string& labels_path);
// The same from the files' (decompressed) bytes; the names are for errors.
Digits parse_idx(const std::vector<unsigned char>& images, const std::vector<unsigned char>& labels,
                 const std::string& images_name = "images", const std::string& labels_name = "labels");
// The test set (t10k-*) from a folder.
Digits load_mnist_test(const std::string& dir);
// Where the MNIST files are: `flag` if given, else $EF_MNIST_DIR, else ../shared/data/mnist
// (relative to the working directory or its parents); empty when none holds the files.
std::optional<std::string> find_mnist(const std::string& flag = "");
// A generated stand-in with the same shapes: each class is a blurred pattern plus noise (for
// running without the files).
Digits synthetic_digits(std::int64_t n, std::uint64_t seed = 0);

}  // namespace ef::data
