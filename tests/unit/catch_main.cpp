// The Catch2 main, compiled once and linked into every unit-test program. The adaptation
// methods register first, as scion's own main does (runtime/adapters/registry.h).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "runtime/adapters/registry.h"

int main(int argc, char** argv) {
  scion::runtime::register_adaptation_methods();
  return Catch::Session().run(argc, argv);
}
