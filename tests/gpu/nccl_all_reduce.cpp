// nccl_all_reduce: the data-parallel gradient sum on the GPUs (NCCL, runtime/comm/
// nccl_reducer.h) against the host path (each rank's values copied to the host and summed
// by MPI, as runtime/training/data_parallel.cpp does without NCCL), on 2 ranks with a GPU
// each.
//
// Run without arguments it checks that it can run here (the CUDA plugin loaded with NCCL,
// at least 2 devices, mpirun on the PATH), else exits 77, and then starts itself as 2
// ranks under mpirun with --rank. Each rank fills runs of device memory with values of
// its own (sizes 0, 1, an odd size and 2^20 + 3, so NCCL's chunking is crossed), sums
// them both ways, and checks:
//   - NCCL is chosen (make_nccl_reducer returns a reducer: one GPU per rank);
//   - its sums equal the host path's bit for bit: with 2 ranks each element is a + b,
//     and IEEE addition is commutative, so any reduction order gives the same bits;
//   - both ranks hold the same bits (their checksums, all-gathered, agree);
//   - a second call on the same communicator sums again (nothing left over from the
//     first);
//   - a start that one rank never joins ends on both ranks: rank 1 fails before entering
//     NCCL's start (a plugin table whose nccl_init fails at once), rank 0 enters it and
//     must give up after the bounded wait (3 s here), and both ranks get the same error
//     (kUnavailable, exit 3 in scion) naming rank 1, well within 60 s.
// Exit: 0 all checks pass, 1 some fail (or fewer than 2 CUDA devices usable where 2 NVIDIA
// devices are visible: visible_devices.h), 77 cannot run here.
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/nccl_reducer.h"
#include "runtime/cuda/plugin_abi.h"
#include "runtime/cuda_plugin.h"
#include "visible_devices.h"

using namespace scion;
using runtime::Backend;

namespace {

using test::kSkipped;
constexpr int kRanks = 2;

int launch() {
  const runtime::CudaBackendInfo& info = runtime::cuda_backend_info();
  if (info.devices.size() < kRanks)
    return test::cannot_run_here("nccl_all_reduce",
                                 std::to_string(info.devices.size()) + " CUDA device(s) usable, " +
                                     std::to_string(kRanks) + " needed (" + info.why_no_device +
                                     ")",
                                 kRanks);
  const ScionCudaPlugin* plugin = runtime::loaded_cuda_plugin();
  if (plugin == nullptr || plugin->nccl_init == nullptr) {
    std::printf("skip: the CUDA plugin was built without NCCL\n");
    return kSkipped;
  }
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) {
    std::printf("skip: mpirun not found (install openmpi-bin)\n");
    return kSkipped;
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    std::printf("cannot find this program's path: %s\n", ec.message().c_str());
    return 1;
  }
  // --oversubscribe: more ranks than cores; --allow-run-as-root: CI containers.
  const std::string command = "mpirun --oversubscribe --allow-run-as-root -np " +
                              std::to_string(kRanks) + " '" + self.string() + "' --rank";
  const int status = std::system(command.c_str());
  if (status == -1 || !WIFEXITED(status)) {
    std::printf("mpirun did not run or was killed: %s\n", command.c_str());
    return 1;
  }
  return WEXITSTATUS(status) == 0 ? 0 : 1;
}

std::vector<float> rank_values(std::size_t n, int rank, std::size_t run) {
  std::mt19937_64 rng(1000 * static_cast<std::uint64_t>(rank) + run);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

std::uint64_t checksum(const std::vector<std::vector<float>>& runs) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes
  for (const auto& run : runs)
    for (const float x : run) {
      std::uint32_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      for (int i = 0; i < 4; ++i) h = (h ^ ((bits >> (8 * i)) & 0xffu)) * 1099511628211ull;
    }
  return h;
}

// The plugin's table with an nccl_init that fails at once, as a rank that fails before
// joining NCCL's start would.
ScionCudaPlugin failing_plugin;
int init_fails_at_once(void*, const unsigned char*, int, int rank, int, char* error,
                       size_t capacity) {
  std::snprintf(error, capacity, "rank %d: made to fail before joining (test)", rank);
  return -1;
}

// Rank 1 never joins the start; both ranks must stop, with the same error, in bounded time.
int check_start_without_rank_1(runtime::Communicator& comm, Backend& backend) {
  const int rank = comm.rank();
  failing_plugin = *runtime::loaded_cuda_plugin();
  if (rank == 1) failing_plugin.nccl_init = init_fails_at_once;
  constexpr int kTimeoutMs = 3000;
  const auto start = std::chrono::steady_clock::now();
  std::string why_not;
  auto reducer =
      runtime::make_nccl_reducer(comm, backend, &failing_plugin,
                                 runtime::cuda_device_for_this_process(), kTimeoutMs, "", &why_not);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool stopped =
      !reducer && reducer.status().code() == StatusCode::kUnavailable &&
      reducer.status().message().find("made to fail before joining") != std::string::npos;
  std::printf("rank %d: a start rank 1 never joins: %s after %.1f s: %s\n", rank,
              stopped && seconds < 60 ? "stopped" : "FAIL", seconds,
              reducer ? "a reducer was made" : reducer.status().message().c_str());
  return stopped && seconds < 60 ? 0 : 1;
}

int run_rank() {
  auto world = runtime::world_communicator();
  if (!world) {
    std::printf("MPI did not start: %s\n", world.status().message().c_str());
    return 1;
  }
  runtime::Communicator& comm = **world;
  const int rank = comm.rank();
  auto fail = [&](const std::string& what) {
    std::printf("rank %d: FAIL %s\n", rank, what.c_str());
    return 1;
  };
  if (comm.size() != kRanks)
    return fail("started as one of " + std::to_string(comm.size()) + " ranks");
  auto made = runtime::make_cuda_backend(runtime::Precision::kF32);
  if (!made) return fail(made.status().message());
  Backend& backend = **made;

  const std::vector<std::size_t> sizes = {0, 1, 4097, (std::size_t{1} << 20) + 3};
  std::vector<std::vector<float>> host_sums;  // the host path's sums (MPI)
  std::vector<float*> device;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    std::vector<float> values = rank_values(sizes[r], rank, r);
    device.push_back(static_cast<float*>(backend.allocate(values.size() * sizeof(float))));
    if (device.back() == nullptr) return fail("no device memory");
    backend.copy_to_device(device.back(), values.data(), values.size() * sizeof(float));
    if (const Status s = comm.all_reduce_sum(std::span<float>(values)); !s.is_ok())
      return fail(s.message());
    host_sums.push_back(std::move(values));
  }

  std::string why_not;
  auto reducer = runtime::make_nccl_reducer(comm, backend, &why_not);
  if (!reducer) return fail("make_nccl_reducer: " + reducer.status().message());
  if (!*reducer) return fail("NCCL was not chosen: " + why_not);

  int failures = 0;
  for (int round = 0; round < 2; ++round) {
    std::vector<runtime::DeviceRun> runs;
    for (std::size_t r = 0; r < sizes.size(); ++r)
      runs.push_back({device[r], static_cast<std::int64_t>(sizes[r])});
    if (round ==
        1) {  // fresh values again: the second call must sum them, not add to the first sums
      for (std::size_t r = 0; r < sizes.size(); ++r) {
        const std::vector<float> values = rank_values(sizes[r], rank, r);
        backend.copy_to_device(device[r], values.data(), values.size() * sizeof(float));
      }
    }
    if (const Status s = (*reducer)->all_reduce_sum(runs); !s.is_ok()) return fail(s.message());
    std::vector<std::vector<float>> nccl_sums;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      std::vector<float> sums(sizes[r]);
      backend.copy_to_host(sums.data(), device[r], sums.size() * sizeof(float));
      std::size_t differing = 0;
      for (std::size_t i = 0; i < sums.size(); ++i)
        if (std::memcmp(&sums[i], &host_sums[r][i], sizeof(float)) != 0) ++differing;
      if (differing > 0) {
        fail("round " + std::to_string(round) + ", run of " + std::to_string(sizes[r]) + ": " +
             std::to_string(differing) + " sums differ from the host path's");
        ++failures;
      }
      nccl_sums.push_back(std::move(sums));
    }
    if (!backend.error().empty()) return fail("backend: " + backend.error());
    const std::uint64_t mine = checksum(nccl_sums);
    auto all = comm.all_gather(std::string(reinterpret_cast<const char*>(&mine), sizeof mine));
    if (!all) return fail(all.status().message());
    for (const std::string& other : *all)
      if (other != (*all)[0]) {
        fail("round " + std::to_string(round) + ": the ranks hold different sums");
        ++failures;
        break;
      }
  }
  for (float* p : device) backend.deallocate(p);
  reducer->reset();
  if (failures == 0)
    std::printf("rank %d: NCCL sums equal the host path's (%s)\n", rank, "2 rounds, 4 runs");
  failures += check_start_without_rank_1(comm, backend);
  runtime::finalize_world_communicator();
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--rank") == 0) return run_rank();
  if (argc != 1) {
    std::fprintf(stderr, "usage: nccl_all_reduce   (it starts its own ranks with mpirun)\n");
    return 2;
  }
  return launch();
}
