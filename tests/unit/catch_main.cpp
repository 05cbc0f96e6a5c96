// The Catch2 main, compiled once and linked into every unit-test program.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
