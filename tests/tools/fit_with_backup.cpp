// A fit with BackupAndRestore for tests/callbacks_test.cpp, which kills it with SIGKILL at
// random moments and starts it again (a separate process: fork() inside the gtest process
// is unsafe with OpenMP's thread pools).
//
//   fit_with_backup BACKUP_DIR OUT_WEIGHTS [EPOCHS] [ROWS]
//
// Trains a small MLP with Dropout (random draws every step) and Adam (slots) on fixed data,
// the same every run (set_seed), with BackupAndRestore(BACKUP_DIR); prints "resumed at epoch
// N" when it restored a backup, "epoch N saving" before each backup and "epoch N done" after; on completion writes the
// weights to OUT_WEIGHTS. "training" comes first, when fit starts. BACKUP_DIR "-" trains without the callback (the reference run).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include <eagerflow/eagerflow.h>

using namespace ef;

namespace {

class Progress : public train::Callback {
 public:
  explicit Progress(std::shared_ptr<train::BackupAndRestore> backup) : backup_(std::move(backup)) {}
  void on_train_begin() override {
    std::cout << "training" << std::endl;
    if (backup_ && backup_->restored_epoch() >= 0)
      std::cout << "resumed at epoch " << backup_->restored_epoch() << std::endl;
  }
  void on_epoch_end(int epoch, const train::Logs&) override { std::cout << "epoch " << epoch << " done" << std::endl; }

 private:
  std::shared_ptr<train::BackupAndRestore> backup_;
};

// Prints "epoch N saving" just before BackupAndRestore writes (it comes right after in the
// callback list), so that the test can kill the process during the write.
class Saving : public train::Callback {
 public:
  void on_epoch_end(int epoch, const train::Logs&) override { std::cout << "epoch " << epoch << " saving" << std::endl; }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: fit_with_backup BACKUP_DIR OUT_WEIGHTS [EPOCHS] [ROWS]\n";
    return 2;
  }
  std::string backup_dir = argv[1], out = argv[2];
  int epochs = argc > 3 ? std::atoi(argv[3]) : 6;
  std::int64_t rows = argc > 4 ? std::atoll(argv[4]) : 24576;
  try {
    random::set_seed(1234);
    Tensor x = random::normal({rows, 64});
    Tensor y = cast(greater(sum(x, {1}), scalar(0.0f)), DType::int64);
    auto model = std::make_shared<train::Sequential>();
    model->add<nn::Dense>(256, "relu");
    model->add<nn::Dropout>(0.25);
    model->add<nn::Dense>(256, "relu");
    model->add<nn::Dense>(2);
    (*model)(zeros({1, 64}));  // built before fit, as BackupAndRestore requires
    model->compile(std::make_shared<optim::Adam>(1e-3), "sparse_categorical_crossentropy", {"accuracy"});
    train::FitOptions o;
    o.batch_size = 32;
    o.epochs = epochs;
    o.verbose = 0;
    std::shared_ptr<train::BackupAndRestore> backup;
    if (backup_dir != "-") {
      backup = std::make_shared<train::BackupAndRestore>(backup_dir);
      o.callbacks.push_back(std::make_shared<Saving>());
      o.callbacks.push_back(backup);
    }
    o.callbacks.push_back(std::make_shared<Progress>(backup));
    model->fit(x, y, o);
    model->save_weights(out);
    std::cout << "finished" << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "fit_with_backup: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
