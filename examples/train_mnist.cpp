// Keras-style training in C++: an MLP 784-512-512-10 and a small CNN on MNIST, with the
// progress bar. The whole train step (forward, loss, backward, Adam) is one traced graph,
// traced once per fit. The CNN reads its images through an ef::data::Dataset: shuffled, shifted
// at random by up to 2 pixels (a traced map), batched and prefetched on a background thread.
//
//   train_mnist [--data DIR] [--epochs N] [--save DIR]     (or EF_MNIST_DIR=DIR)
// Without the MNIST files it says so and trains on generated digits instead. The trained MLP
// is saved under --save (default build/demo): weights (mlp.safetensors), a saved model (mlp/)
// and ONNX (mlp.onnx); the saved model is loaded back and scored next to the original.
#include <eagerflow/data/dataset.h>
#include <eagerflow/eagerflow.h>
#include <eagerflow/saving/onnx.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

namespace {

struct Split {
  ef::Tensor x, y, x_val, y_val;
};

Split load(const std::string& flag) {
  auto dir = ef::data::find_mnist(flag);
  ef::data::Digits d;
  if (dir) {
    std::cout << "MNIST from " << *dir << " (the 10,000 test digits: train on 8,000, validate on 2,000)\n";
    d = ef::data::load_mnist_test(*dir);
  } else {
    std::cout << "MNIST files not found (give --data DIR or set EF_MNIST_DIR); training on 10,000 generated digits\n";
    d = ef::data::synthetic_digits(10000, 7);
  }
  return {ef::slice(d.images, {0}, {8000}), ef::slice(d.labels, {0}, {8000}), ef::slice(d.images, {8000}, {10000}),
          ef::slice(d.labels, {8000}, {10000})};
}

// Augmentation: the image moved by a random offset in [-2, 2] on each axis (zeros shifted in),
// as a crop of the image padded by 2. Traced once; randint draws anew on every replay. Its own
// seed gives it its own sequence (the train step's dropout draws from the global one), and one
// map call at a time takes the draws in element order: two runs print the same figures.
ef::data::Element random_shift(const ef::data::Element& e) {
  ef::Tensor padded = ef::pad(e[0], {{2, 2}, {2, 2}, {0, 0}});
  ef::Tensor offset = ef::random::randint({2}, 0, 5, ef::DType::int64, /*seed=*/7);
  ef::Tensor rows = ef::arange(28, ef::DType::int64) + ef::slice(offset, {0}, {1});
  ef::Tensor cols = ef::arange(28, ef::DType::int64) + ef::slice(offset, {1}, {2});
  return ef::data::Element({ef::gather(ef::gather(padded, rows, 0), cols, 1), e[1]});
}

double accuracy(const ef::Tensor& logits, const ef::Tensor& labels) {
  return ef::mean(ef::cast(ef::equal(ef::argmax(logits, -1), labels), ef::DType::float32)).item<float>();
}

void report(const char* what, ef::train::Model& model, const ef::train::History& h) {
  std::cout << what << ": final val_accuracy " << h.history.at("val_accuracy").back()
            << ", train step traced " << model.tracing_count() << " time(s) for the whole fit\n\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir, save_dir = "build/demo";
  int epochs = 3;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--data") && i + 1 < argc) data_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--save") && i + 1 < argc) save_dir = argv[++i];
    else {
      std::cerr << "usage: train_mnist [--data DIR] [--epochs N] [--save DIR]\n";
      return 2;
    }
  }
  try {
    ef::random::set_seed(42);
    Split s = load(data_dir);
    auto validation = std::make_pair(s.x_val, s.y_val);

    std::cout << "\n== MLP 784-512-512-10, Adam, batch 128\n";
    ef::train::Sequential mlp;
    mlp.add<ef::nn::Flatten>();
    mlp.add<ef::nn::Dense>(512, "relu");
    mlp.add<ef::nn::Dense>(512, "relu");
    mlp.add<ef::nn::Dense>(10);
    mlp.compile(std::make_shared<ef::optim::Adam>(1e-3), ef::train::SparseCategoricalCrossentropy(/*from_logits=*/true),
                {"accuracy"});
    auto h1 = mlp.fit(s.x, s.y, {.batch_size = 128, .epochs = epochs, .validation_data = validation});
    mlp.summary();
    report("MLP", mlp, h1);

    // Saving: weights, a saved model that runs without this code, and ONNX.
    std::filesystem::create_directories(save_dir);
    mlp.save_weights(save_dir + "/mlp.safetensors");
    ef::save(mlp, save_dir + "/mlp");
    ef::onnx::export_model(mlp, save_dir + "/mlp.onnx");
    ef::SavedModel loaded = ef::load(save_dir + "/mlp");
    ef::Tensor original_logits = mlp(s.x_val, false), loaded_logits = loaded("serving_default", {s.x_val})[0];
    bool identical = ef::max(ef::abs(original_logits - loaded_logits)).item<float>() == 0.0f;
    std::cout << "Saved " << save_dir << "/mlp.safetensors, " << save_dir << "/mlp/ and " << save_dir << "/mlp.onnx\n"
              << "Saved model loaded back: val_accuracy " << accuracy(loaded_logits, s.y_val) << " (original "
              << accuracy(original_logits, s.y_val) << "; identical outputs: " << (identical ? "yes" : "no") << ")\n\n";

    std::cout << "== CNN conv(16)-pool-conv(32)-pool-dense(10), Adam, batch 64\n";
    auto images = [](const ef::Tensor& t) { return ef::reshape(t, {-1, 28, 28, 1}); };
    ef::train::Sequential cnn;
    cnn.add<ef::nn::Conv2D>(16, ef::Stride2{3, 3}, ef::nn::Conv2DOptions{.activation = "relu"});
    cnn.add<ef::nn::MaxPool2D>();
    cnn.add<ef::nn::Conv2D>(32, ef::Stride2{3, 3}, ef::nn::Conv2DOptions{.activation = "relu"});
    cnn.add<ef::nn::MaxPool2D>();
    cnn.add<ef::nn::Flatten>();
    cnn.add<ef::nn::Dropout>(0.25);
    cnn.add<ef::nn::Dense>(10);
    cnn.compile(std::make_shared<ef::optim::Adam>(2e-3), ef::train::SparseCategoricalCrossentropy(true), {"accuracy"});
    ef::data::Dataset train = ef::data::Dataset::from_tensor_slices({images(s.x), s.y})
                                  .shuffle(8000, /*seed=*/1)
                                  .map(random_shift, /*num_parallel_calls=*/1)
                                  .batch(64)
                                  .prefetch(ef::data::kAutotune);
    ef::data::Dataset val_batches = ef::data::Dataset::from_tensor_slices({images(s.x_val), s.y_val}).batch(256);
    std::cout << "Input pipeline: " << train.element_spec().str() << ", " << train.cardinality() << " batches per epoch\n";
    auto h2 = cnn.fit(train, {.epochs = epochs, .validation_data = val_batches,
                              .callbacks = {std::make_shared<ef::train::TensorBoard>(save_dir + "/logs", 1)}});  // docs/tensorboard.md
    cnn.summary();
    report("CNN", cnn, h2);
  } catch (const ef::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
