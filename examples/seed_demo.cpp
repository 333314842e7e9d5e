#include <eagerflow/eagerflow.h>
#include <iostream>
int main() {
  ef::random::set_seed(0);
  auto x = ef::random::uniform({2, 3});
  std::cout << x << "\n" << ef::relu(x - 0.5f) << "\n";
}
