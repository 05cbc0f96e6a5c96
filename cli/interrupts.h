// Ctrl-C and SIGTERM, delivered to a thread where they can do no harm.
//
// oneDNN 2.6 (Debian's) JIT GEMM kernels point rsp into a heap buffer while they run; a
// signal handled on such a thread has its frame written there and corrupts the heap
// (oneDNN issue #4845, fixed upstream by PR #4855 after 2.6). scion saw it as an abort,
// `corrupted size vs. prev_size`, when Ctrl-C fell inside an fp32 product. So scion
// blocks SIGINT and SIGTERM in its main thread before any other thread of its own
// exists: OpenMP's workers, MPI's and CUDA's threads inherit the mask and never run a
// handler; one watcher thread keeps them unblocked, so the kernel delivers them there
// (or to a thread a library started before main, which runs no oneDNN code).
#pragma once

#include <atomic>

namespace scion::cli {

// First thing in main, before anything starts a thread. SIGINT and SIGTERM keep their
// default action (end scion at once) until catch_interrupts().
void route_interrupts();

// From now on SIGINT and SIGTERM only set the returned flag; long work polls it and stops
// cleanly (training marks its runs interrupted and checkpoints them).
const std::atomic<bool>& catch_interrupts();

}  // namespace scion::cli
