#include "runtime/comm/nccl_reducer.h"

#include <cstdlib>
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
std::string readiness(const Backend& backend, const ScionCudaPlugin* plugin, int rank, int device,
                      const std::string& timeout_problem) {
  const std::string who = "rank " + std::to_string(rank) + ": ";
  if (backend.device() != Device::kCuda) return "0 " + who + "trains on the CPU";
  if (plugin == nullptr) return "0 " + who + "the CUDA plugin is not loaded";
  if (plugin->nccl_init == nullptr)
    return "0 " + who +
           "this scion's CUDA plugin was built without NCCL (install NCCL and reconfigure "
           "with -Dnccl=enabled)";
  if (!timeout_problem.empty()) return "0 " + who + timeout_problem;
  char uuid[128] = "";
  if (plugin->device_uuid(device, uuid, sizeof uuid) != 0) return "0 " + who + uuid;
  return std::string("1 ") + uuid;
}

// The failures among the ranks' all-gathered outcomes ("" for a rank that succeeded),
// joined; empty when every rank succeeded.
std::string failures_of(const std::vector<std::string>& outcomes) {
  std::string joined;
  for (const std::string& failure : outcomes)
    if (!failure.empty()) joined += (joined.empty() ? "" : "; ") + failure;
  return joined;
}

// The failures among the ranks' answers of step 2 ("1" + rank 0's id, "1" from the
// others, "0" + why), joined; empty when every rank is prepared and the id arrived.
std::string prepare_failures(const std::vector<std::string>& answers) {
  std::vector<std::string> failures;
  for (std::size_t r = 0; r < answers.size(); ++r) {
    const std::string& answer = answers[r];
    if (answer.empty() || answer[0] != '1')
      failures.push_back(answer.size() > 1 ? answer.substr(1)
                                           : "rank " + std::to_string(r) + " gave no answer");
    else if (r == 0 && answer.size() != 1 + SCION_NCCL_ID_BYTES)
      failures.push_back("rank 0 sent no NCCL id");
    else
      failures.push_back("");
  }
  return failures_of(failures);
}

// The error every rank returns when NCCL did not start on some rank.
Status nccl_did_not_start(const std::string& failures, int timeout_ms) {
  return Status(StatusCode::kUnavailable,
                "NCCL did not start on every rank, so every rank stops: " + failures +
                    ". Rerun with NCCL_DEBUG=INFO to see why; SCION_NCCL_INIT_TIMEOUT_S sets "
                    "how long a rank waits for the others (now " +
                    std::to_string(timeout_ms / 1000) + " s)");
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

Result<int> nccl_init_timeout_ms() {
  const char* text = std::getenv("SCION_NCCL_INIT_TIMEOUT_S");
  if (text == nullptr || *text == '\0') return kDefaultNcclInitTimeoutS * 1000;
  char* end = nullptr;
  const long seconds = std::strtol(text, &end, 10);
  if (*end != '\0' || seconds <= 0 || seconds > 86400)
    return Status(StatusCode::kInvalidArgument,
                  std::string("SCION_NCCL_INIT_TIMEOUT_S is '") + text +
                      "', not a whole number of seconds from 1 to 86400");
  return static_cast<int>(seconds) * 1000;
}

Result<std::unique_ptr<DeviceReducer>> make_nccl_reducer(Communicator& comm, const Backend& backend,
                                                         std::string* why_not) {
  const Result<int> timeout = nccl_init_timeout_ms();
  return make_nccl_reducer(comm, backend, loaded_cuda_plugin(), cuda_device_for_this_process(),
                           timeout ? *timeout : kDefaultNcclInitTimeoutS * 1000,
                           timeout ? std::string() : timeout.status().message(), why_not);
}

Result<std::unique_ptr<DeviceReducer>> make_nccl_reducer(Communicator& comm, const Backend& backend,
                                                         const ScionCudaPlugin* plugin, int device,
                                                         int init_timeout_ms,
                                                         const std::string& timeout_problem,
                                                         std::string* why_not) {
  // 1. Can every rank take part, each on a GPU of its own? If not, the host path.
  Result<std::vector<std::string>> ready =
      comm.all_gather(readiness(backend, plugin, comm.rank(), device, timeout_problem));
  if (!ready) return ready.status();
  if (*why_not = why_not_nccl(*ready); !why_not->empty()) return std::unique_ptr<DeviceReducer>();

  // 2. Every rank prepares its side (device, stream) and rank 0 makes the unique id; the
  // ranks agree that all of that worked before any of them enters the collective start,
  // and the id reaches every rank in the same exchange (a broadcast from rank 0).
  char error[1024] = "";
  void* nccl = nullptr;
  std::string mine;
  if (plugin->nccl_prepare(device, &nccl, error, sizeof error) != 0) {
    mine = "rank " + std::to_string(comm.rank()) + ": " + error;
  } else if (comm.rank() == 0) {
    unsigned char id[SCION_NCCL_ID_BYTES];
    if (plugin->nccl_unique_id(id, error, sizeof error) == 0)
      mine = std::string(reinterpret_cast<const char*>(id), sizeof id);
    else
      mine = "rank 0 could not make an NCCL id: " + std::string(error);
  }
  // Each rank's answer: "1" + (rank 0: the id), or "0" + why it failed.
  const bool prepared = nccl != nullptr && (comm.rank() != 0 || mine.size() == SCION_NCCL_ID_BYTES);
  Result<std::vector<std::string>> before = comm.all_gather((prepared ? "1" : "0") + mine);
  const std::string before_failures = before ? prepare_failures(*before) : "";
  if (!before || !before_failures.empty()) {
    plugin->nccl_destroy(nccl);
    if (!before) return before.status();
    return nccl_did_not_start(before_failures, init_timeout_ms);
  }
  const std::string& id = before->front();

  // 3. Every rank starts its communicator, waiting a bounded time for the others, and the
  // ranks agree that every one started.
  const int rc = plugin->nccl_init(nccl, reinterpret_cast<const unsigned char*>(id.data() + 1),
                                   comm.size(), comm.rank(), init_timeout_ms, error, sizeof error);
  Result<std::vector<std::string>> after = comm.all_gather(
      rc == 0 ? std::string() : "rank " + std::to_string(comm.rank()) + ": " + error);
  if (!after || !failures_of(*after).empty()) {
    plugin->nccl_destroy(nccl);
    if (!after) return after.status();
    return nccl_did_not_start(failures_of(*after), init_timeout_ms);
  }
  return std::unique_ptr<DeviceReducer>(std::make_unique<NcclReducer>(*plugin, nccl, comm.size()));
}

}  // namespace scion::runtime
