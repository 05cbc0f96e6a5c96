#include "runtime/cuda_plugin.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "runtime/comm/launch_environment.h"
#include "runtime/cuda/plugin_abi.h"
#include "scion_config.h"

namespace scion::runtime {
namespace {

constexpr const char* kPluginFile = "libscion_cuda.so";

// The files the plugin is looked for in, in order (cuda_plugin.h): only $SCION_CUDA_PLUGIN
// when it is set, else paths relative to this executable's folder (as an $ORIGIN rpath
// would be), then the configured install path. Paths relative to the executable keep a
// moved or copied build folder, or a relocated installation, on its own plugin.
std::vector<std::string> plugin_candidates() {
  if (const char* path = std::getenv("SCION_CUDA_PLUGIN"); path != nullptr && *path != '\0')
    return {path};
  std::vector<std::string> candidates;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path folder = exe.parent_path();
    candidates.push_back((folder / kPluginFile).string());
    candidates.push_back((folder / SCION_CUDA_PLUGIN_FROM_BUILD_EXE).lexically_normal().string());
    if (const std::string from_bindir = SCION_CUDA_PLUGIN_FROM_BINDIR; !from_bindir.empty())
      candidates.push_back((folder / from_bindir).lexically_normal().string());
  }
  candidates.push_back(SCION_CUDA_PLUGIN_INSTALL_PATH);
  std::vector<std::string> unique;
  for (const std::string& c : candidates)
    if (std::find(unique.begin(), unique.end(), c) == unique.end()) unique.push_back(c);
  return unique;
}

// The plugin's table once open_plugin() accepted it (ABI version checked), else null.
const ScionCudaPlugin* loaded_plugin = nullptr;

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

CudaBackendInfo open_plugin() {
  CudaBackendInfo info;
  info.built = SCION_HAVE_CUDA == 1;
  if (!info.built) {
    info.why_no_device = "the CUDA backend was not built (install the CUDA toolkit and reconfigure "
                         "with -Dcuda=enabled)";
    return info;
  }
  info.plugin_candidates = plugin_candidates();
  // The first candidate that exists is the one: a broken plugin there is reported, not
  // passed over for another build's.
  for (const std::string& candidate : info.plugin_candidates) {
    std::error_code ec;
    if (std::filesystem::exists(candidate, ec)) {
      info.plugin_path = candidate;
      break;
    }
  }
  if (info.plugin_path.empty()) {
    std::string tried;
    for (const std::string& candidate : info.plugin_candidates)
      tried += (tried.empty() ? "" : ", ") + candidate;
    info.why_no_device = "the CUDA backend plugin was not found (looked for " + tried +
                         "; set SCION_CUDA_PLUGIN to its path)";
    return info;
  }
  // Never closed: the plugin lives as long as the process, like any linked library.
  void* handle = dlopen(info.plugin_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    info.why_no_device = "the CUDA backend plugin did not load: " + std::string(why ? why : "unknown error") +
                         " (install the CUDA runtime libraries, or set SCION_CUDA_PLUGIN to the "
                         "plugin's path)";
    return info;
  }
  auto entry = reinterpret_cast<ScionCudaPluginEntry>(dlsym(handle, SCION_CUDA_PLUGIN_ENTRY));
  const ScionCudaPlugin* plugin = entry ? entry() : nullptr;
  if (plugin == nullptr || plugin->abi_version != SCION_CUDA_PLUGIN_ABI_VERSION) {
    info.why_no_device = info.plugin_path + " is not a CUDA plugin of this scion (ABI version " +
                         std::to_string(SCION_CUDA_PLUGIN_ABI_VERSION) + " expected); reinstall scion";
    return info;
  }
  info.loaded = true;
  loaded_plugin = plugin;
  char libraries[512];
  plugin->describe_libraries(libraries, sizeof libraries);
  info.libraries = libraries;
  std::string text(16384, '\0');
  const int count = plugin->describe_devices(text.data(), text.size());
  text.resize(std::strlen(text.c_str()));
  if (count < 0) {
    info.why_no_device = text;
  } else if (count == 0) {
    info.why_no_device = "no CUDA device found";
  } else {
    info.devices = split_lines(text);
  }
  return info;
}

}  // namespace

const CudaBackendInfo& cuda_backend_info() {
  static const CudaBackendInfo info = open_plugin();
  return info;
}

int cuda_device_for_this_process() {
  const CudaBackendInfo& info = cuda_backend_info();
  const int count = static_cast<int>(info.devices.size());
  const std::optional<int> local = local_rank();
  return count > 0 && local ? *local % count : 0;
}

const ScionCudaPlugin* loaded_cuda_plugin() {
  cuda_backend_info();
  return loaded_plugin;
}

Result<std::unique_ptr<Backend>> make_cuda_backend(Precision precision,
                                                   const CudaBackendOptions& options) {
  const CudaBackendInfo& info = cuda_backend_info();
  if (info.devices.empty() || loaded_plugin == nullptr)
    return Status(StatusCode::kUnavailable, "no CUDA device to run on: " + info.why_no_device);
  const int device = cuda_device_for_this_process();
  char error[1024] = "";
  const unsigned flags = (options.allow_tf32 ? SCION_CUDA_ALLOW_TF32 : 0u) |
                         (options.products_on_cublas ? SCION_CUDA_PRODUCTS_ON_CUBLAS : 0u);
  Backend* backend = loaded_plugin->create_backend(device, static_cast<int>(precision), flags,
                                                   error, sizeof error);
  if (backend == nullptr)
    return Status(StatusCode::kUnavailable,
                  std::string("the CUDA backend could not start on ") +
                      info.devices[static_cast<std::size_t>(device)] + ": " + error);
  return std::unique_ptr<Backend>(backend);
}

}  // namespace scion::runtime
