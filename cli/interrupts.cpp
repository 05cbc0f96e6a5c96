#include "cli/interrupts.h"

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <thread>

namespace scion::cli {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted.store(true); }

sigset_t interrupt_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void route_interrupts() {
  const sigset_t set = interrupt_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // A signal that comes before the watcher unblocks stays pending, and is delivered then.
  std::thread([set] {
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    while (true) pause();
  }).detach();
}

const std::atomic<bool>& catch_interrupts() {
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  return g_interrupted;
}

}  // namespace scion::cli
