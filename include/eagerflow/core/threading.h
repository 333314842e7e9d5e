#pragma once
// One thread budget shared by oneDNN and our own loops (both run on OpenMP, so they never
// fight over cores). Default: the machine's cores.
namespace ef {
void set_num_threads(int n);
int num_threads();
// Makes the calling thread's OpenMP team size match num_threads() (cheap when it already does).
void sync_thread_budget();
}  // namespace ef
