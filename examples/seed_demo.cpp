// The question eagerflow grew from: a layer whose call() prints a message, wrapped in a
// traced function. TensorFlow prints the message twice on the first call (it traces again
// after the first trace created the Dense layer's variables) and its log never says why.
// eagerflow traces once per new signature and records the reason for every trace.
#include <eagerflow/eagerflow.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace {

std::string now() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::ostringstream os;
  os << std::put_time(std::localtime(&t), "%H:%M:%S");
  return os.str();
}

class EagerLayer : public ef::nn::Layer {
 public:
  ef::Tensor call(const ef::Tensor& x) override {
    // Host code: runs while tracing, never on replay.
    std::cout << "Currently running eagerly " << now() << "\n";
    return dense_(x);
  }

 private:
  ef::nn::Dense dense_{32};
};

}  // namespace

int main() {
  ef::random::set_seed(0);
  // Show traced layer calls, created variables and trace reasons (EF_LOG_LEVEL overrides).
  if (!std::getenv("EF_LOG_LEVEL")) ef::set_log_level(ef::LogLevel::verbose);
  ef::set_log_sink([](std::string_view line) { std::cout << "  log| " << line << "\n"; });

  auto x = ef::random::uniform({60, 28, 28});
  auto layer = EagerLayer();
  auto f = ef::function(layer);

  std::cout << "== f(x) with x: float32[60,28,28] (first call: traces once, builds the Dense)\n";
  ef::Tensor y = f(x);
  std::cout << "== f(x) again (replay: prints nothing)\n";
  f(x);
  std::cout << "== f(x16) with x16: float32[16,28,28] (new signature: traces once, with the reason)\n";
  f(ef::random::uniform({16, 28, 28}));

  std::cout << "\nf.tracing_count() = " << f.tracing_count() << "\n";
  for (const auto& t : f.traces())
    std::cout << "trace #" << t.number << " " << t.signature << ": " << t.reason << "  [" << std::fixed
              << std::setprecision(3) << t.milliseconds << " ms]\n";

  std::cout << "\nweights:\n";
  for (const auto& w : layer.weights()) std::cout << "  " << w.name() << " " << ef::name_of(w.dtype()) << w.shape().str() << "\n";

  auto concrete = f.get_concrete_function(ef::TensorSpec{ef::DType::float32, {60, 28, 28}});
  std::cout << "\nthe graph of trace #1, as traced:\n" << ef::ir::to_text(concrete->traced_graph()) << "\n";
  std::cout << "and as it runs, after the passes (bias add fused into the oneDNN matmul):\n" << *concrete << "\n";

  // Replay equals eager: the same layer called eagerly gives the same numbers.
  ef::set_log_level(ef::LogLevel::warning);
  std::cout << "\ncalling the layer eagerly (host code runs every time):\n";
  ef::Tensor eager = layer(x);
  std::cout << "replay == eager (bit for bit): " << std::boolalpha
            << (f(x).to_vector<float>() == eager.to_vector<float>()) << "\n";
  std::cout << "y[0, 0, :4] = " << ef::slice(y, {0, 0, 0}, {1, 1, 4}) << "\n";
  return 0;
}
