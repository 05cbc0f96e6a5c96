// Options every subcommand shares, parsed once in main.cpp.
#pragma once

#include <filesystem>
#include <string>

#include "runtime/tensor.h"

namespace scion::cli {

struct GlobalOptions {
  std::string workspace_dir;             // -C: run as if started in this directory
  std::string spec_file = "scion.yaml";  // -f: the workspace spec
  std::string store_dir;                 // --store: default .scion/ beside the spec
  bool json = false;                     // --json: machine-readable output on stdout
  int verbosity = 0;                     // -v raises, -q lowers
  // --device cpu|cuda|auto (cli/device_choice.h). cpu by default: the CUDA backend has been
  // checked on one GPU model only, and never across GPUs (docs/gpu.md); a user asks for it
  // with --device auto or cuda.
  std::string device = "cpu";
  // What `device` resolved to, once, before the command ran (main.cpp).
  runtime::Device compute_device = runtime::Device::kCpu;

  // The store directory in effect: --store, or .scion/ beside the spec file.
  std::filesystem::path store_path() const {
    if (!store_dir.empty()) return store_dir;
    return std::filesystem::path(spec_file).parent_path() / ".scion";
  }
};

}  // namespace scion::cli
