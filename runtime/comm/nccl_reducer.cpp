#include "runtime/comm/nccl_reducer.h"

#include <set>
#include <string>
#include <vector>

#include "runtime/cuda/plugin_abi.h"
#include "runtime/cuda_plugin.h"

namespace scion::runtime {
namespace {

class NcclReducer final : public DeviceReducer {
 public:
  NcclReducer(const ScionCudaPlugin& plugin, void* comm, int ranks)
      : plugin_(plugin), comm_(comm), ranks_(ranks) {}
  ~NcclReducer() override { plugin_.nccl_destroy(comm_); }
  NcclReducer(const NcclReducer&) = delete;
  NcclReducer& operator=(const NcclReducer&) = delete;

  Status all_reduce_sum(std::span<const DeviceRun> runs) override {
    std::vector<float*> data;
    std::vector<size_t> counts;
    for (const DeviceRun& run : runs) {
      data.push_back(run.data);
      counts.push_back(static_cast<size_t>(run.count));
    }
    char error[1024] = "";
    if (plugin_.nccl_all_reduce_sum(comm_, data.data(), counts.data(), data.size(), error,
                                    sizeof error) != 0)
      return Status(StatusCode::kUnavailable,
                    std::string("summing the gradients over the GPUs: ") + error);
    return Status::ok();
  }

  std::string describe() const override {
    return "NCCL between " + std::to_string(ranks_) + " GPUs";
  }

 private:
  const ScionCudaPlugin& plugin_;
  void* comm_;
  int ranks_;
};

// "1 <uuid>" when this rank can take part in NCCL, else "0 <why not>".
std::string readiness(const Backend& backend, const ScionCudaPlugin* plugin, int rank, int device) {
  const std::string who = "rank " + std::to_string(rank) + ": ";
  if (backend.device() != Device::kCuda) return "0 " + who + "trains on the CPU";
  if (plugin == nullptr) return "0 " + who + "the CUDA plugin is not loaded";
  if (plugin->nccl_init == nullptr)
    return "0 " + who +
           "this scion's CUDA plugin was built without NCCL (install NCCL and reconfigure "
           "with -Dnccl=enabled)";
  char uuid[128] = "";
  if (plugin->device_uuid(device, uuid, sizeof uuid) != 0) return "0 " + who + uuid;
  return std::string("1 ") + uuid;
}

}  // namespace

std::string why_not_nccl(const std::vector<std::string>& answers) {
  std::set<std::string> gpus;
  for (std::size_t r = 0; r < answers.size(); ++r) {
    const std::string& answer = answers[r];
    if (answer.rfind("1 ", 0) != 0)
      return answer.size() > 2 ? answer.substr(2) : "rank " + std::to_string(r) + " gave no answer";
    if (!gpus.insert(answer.substr(2)).second)
      return "rank " + std::to_string(r) +
             " shares its GPU with a lower rank (more ranks than GPUs on a machine); NCCL needs "
             "one GPU per rank";
  }
  return "";
}

Result<std::unique_ptr<DeviceReducer>> make_nccl_reducer(Communicator& comm, const Backend& backend,
                                                         std::string* why_not) {
  const ScionCudaPlugin* plugin = loaded_cuda_plugin();
  const int device = cuda_device_for_this_process();

  // 1. Can every rank take part, each on a GPU of its own?
  Result<std::vector<std::string>> ready =
      comm.all_gather(readiness(backend, plugin, comm.rank(), device));
  if (!ready) return ready.status();
  if (*why_not = why_not_nccl(*ready); !why_not->empty()) return std::unique_ptr<DeviceReducer>();

  // 2. Rank 0's unique id, to every rank (all_gather as a broadcast from rank 0).
  std::string mine;
  if (comm.rank() == 0) {
    unsigned char id[SCION_NCCL_ID_BYTES];
    char error[1024] = "";
    mine = plugin->nccl_unique_id(id, error, sizeof error) == 0
               ? "1" + std::string(reinterpret_cast<const char*>(id), sizeof id)
               : "0rank 0 could not make an NCCL id: " + std::string(error);
  }
  Result<std::vector<std::string>> ids = comm.all_gather(mine);
  if (!ids) return ids.status();
  const std::string& id = ids->front();
  if (id.empty() || id[0] != '1' || id.size() != 1 + SCION_NCCL_ID_BYTES) {
    *why_not = id.empty() ? "rank 0 sent no NCCL id" : id.substr(1);
    return std::unique_ptr<DeviceReducer>();
  }

  // 3. Every rank's communicator, and whether all of them started.
  void* nccl = nullptr;
  char error[1024] = "";
  const int rc = plugin->nccl_init(device, reinterpret_cast<const unsigned char*>(id.data() + 1),
                                   comm.size(), comm.rank(), &nccl, error, sizeof error);
  Result<std::vector<std::string>> started = comm.all_gather(
      rc == 0 ? std::string() : "rank " + std::to_string(comm.rank()) + ": " + error);
  if (!started) {
    plugin->nccl_destroy(nccl);
    return started.status();
  }
  for (const std::string& failure : *started) {
    if (failure.empty()) continue;
    plugin->nccl_destroy(nccl);
    *why_not = failure;
    return std::unique_ptr<DeviceReducer>();
  }
  return std::unique_ptr<DeviceReducer>(std::make_unique<NcclReducer>(*plugin, nccl, comm.size()));
}

}  // namespace scion::runtime
