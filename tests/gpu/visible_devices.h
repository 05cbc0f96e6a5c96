// Whether this machine shows NVIDIA GPUs, asked without scion's CUDA plugin: the rule that
// decides whether a gpu-suite program that cannot make its CUDA backend is skipped or
// failed (tests/gpu/visible_devices.py is the same rule for the Python tests).
//
// A program of the gpu suite that cannot run exits 77, which meson counts as SKIP. That is
// right on a machine without a GPU, and wrong on one with a GPU: a missing libcuda, an old
// driver or a plugin that was not found would turn the whole suite into green SKIPs. So
// where a device is visible, failing to make the CUDA backend is a FAIL with the reason.
// Visible means either
//   - a device node nvidia<N> in /dev (or in $SCION_TEST_DEV_DIR, which tests set to fake
//     or hide the nodes), or
//   - a "GPU <n>: ..." line from `nvidia-smi -L` (the program named by
//     $SCION_TEST_NVIDIA_SMI, default nvidia-smi on the PATH; tests point it at a fake).
// The count is the larger of the two.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

namespace scion::test {

inline constexpr int kSkipped = 77;

struct VisibleDevices {
  int count = 0;
  std::string evidence;  // what showed them ("/dev/nvidia0", "nvidia-smi -L: GPU 0: ...")
};

inline VisibleDevices visible_nvidia_devices() {
  VisibleDevices visible;
  const char* dev_dir = std::getenv("SCION_TEST_DEV_DIR");
  const std::filesystem::path dev = dev_dir != nullptr && *dev_dir != '\0' ? dev_dir : "/dev";
  int nodes = 0;
  std::error_code ec;
  const std::regex node("nvidia[0-9]+");
  for (const auto& entry : std::filesystem::directory_iterator(dev, ec)) {
    if (!std::regex_match(entry.path().filename().string(), node)) continue;
    if (nodes++ == 0) visible.evidence = entry.path().string();
  }
  const char* smi_env = std::getenv("SCION_TEST_NVIDIA_SMI");
  const std::string smi = smi_env != nullptr && *smi_env != '\0' ? smi_env : "nvidia-smi";
  int listed = 0;
  std::string first;
  if (FILE* pipe = popen(("'" + smi + "' -L 2>/dev/null").c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, pipe) != nullptr)
      if (std::string(line).rfind("GPU ", 0) == 0 && listed++ == 0) first = line;
    pclose(pipe);
  }
  if (!first.empty() && first.back() == '\n') first.pop_back();
  visible.count = nodes > listed ? nodes : listed;
  if (listed > 0)
    visible.evidence =
        (visible.evidence.empty() ? "" : visible.evidence + ", ") + "nvidia-smi -L: " + first;
  return visible;
}

// The exit of `program` when what it needs cannot run here (`reason`): 77 (SKIP) where
// fewer than `needed` devices are visible, else 1 (FAIL), printing which.
inline int cannot_run_here(const char* program, const std::string& reason, int needed = 1) {
  const VisibleDevices visible = visible_nvidia_devices();
  if (visible.count >= needed) {
    std::printf("%s: FAIL: %d NVIDIA device(s) visible (%s), but the CUDA backend cannot run: %s\n",
                program, visible.count, visible.evidence.c_str(), reason.c_str());
    return 1;
  }
  std::printf("%s: skip: %s (NVIDIA devices visible: %d, needed: %d)\n", program, reason.c_str(),
              visible.count, needed);
  return kSkipped;
}

}  // namespace scion::test
