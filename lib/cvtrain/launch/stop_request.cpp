// Stop requests through an atomic flag: the only thing a signal handler may safely do here.
#include "cvtrain/launch/stop_request.h"

#include <atomic>
#include <csignal>
#include <initializer_list>

namespace cvtrain {
namespace {

std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "an atomic set from a signal handler must be lock-free");

extern "C" void on_stop_signal(int signal_number) { g_stop_signal.store(signal_number); }

}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;  // the second signal terminates as usual
  for (int signal_number : {SIGTERM, SIGUSR1, SIGINT}) sigaction(signal_number, &action, nullptr);
}

int stop_requested() { return g_stop_signal.load(); }

void request_stop(int signal_number) { g_stop_signal.store(signal_number); }

}  // namespace cvtrain
