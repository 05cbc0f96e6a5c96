// Which backend a command computes on (`--device cpu|cuda|auto`), and the one place
// backends are made for it: the training session, test, eval, predict and blame all get
// theirs from make_backend(), so the device choice reaches every one of them.
//
// auto means CUDA when the CUDA plugin loaded and sees a usable device
// (runtime/cuda_plugin.h), else the CPU; it never fails. cuda without a usable device is
// an error (kUnavailable: exit 3) saying why. The choice is resolved once, before any
// work, so a command never starts on one device and continues on another.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "runtime/backend.h"
#include "runtime/tensor.h"

namespace scion::runtime {

enum class DeviceChoice { kAuto, kCpu, kCuda };

// "auto", "cpu" or "cuda"; nullopt for anything else.
std::optional<DeviceChoice> parse_device_choice(std::string_view text);

// The device `choice` means on this machine, or kUnavailable (cuda without a device).
Result<Device> resolve_device(DeviceChoice choice);

const char* device_name(Device device);

// A new backend on `device` in `precision`: the CPU backend with its default threads and
// products, or the CUDA backend (make_cuda_backend), whose start can fail (kUnavailable).
Result<std::unique_ptr<Backend>> make_backend(Device device, Precision precision);

// The backend's first failure (Backend::error) as a kUnavailable status naming `during`;
// ok when its operations have all succeeded. Called where results are about to be kept:
// before a checkpoint or a trained model is written, before test or eval results are.
Status check_backend(const Backend& backend, const std::string& during);

}  // namespace scion::runtime
