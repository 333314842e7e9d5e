#include <eagerflow/eagerflow.h>
#include <iostream>

int main() {
  ef::Tensor y = ef::matmul(ef::ones({2, 3}), ef::ones({3, 4}));
  std::cout << y << "\n";
  return ef::sum(y).item<float>() == 24.f ? 0 : 1;
}
