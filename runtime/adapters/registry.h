// The adaptation methods that are units of their own (runtime/adapters/<method>/, docs/architecture.md),
// registered in one list (registry.cpp): a new method is a folder plus one line there.
//
// Every program that reads a spec calls register_adaptation_methods() first (scion's main,
// the test mains): until then the loader knows only the built-in methods (spec/keys.h
// kMethods), and a registered method's key (lora, ia3) is reported as unknown.
#pragma once

namespace scion::runtime {

// Registers the spec block (spec/adaptation_method.h) of each of adaptation_methods(), in
// order. Idempotent and thread-safe; call before any spec is read.
void register_adaptation_methods();

}  // namespace scion::runtime
