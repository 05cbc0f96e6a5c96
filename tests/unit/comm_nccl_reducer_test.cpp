// How the ranks choose between NCCL and the host path for the gradient sums
// (runtime/comm/nccl_reducer.h), and which GPU a rank takes (launch_environment.h), on
// any machine: the NCCL calls themselves need 2 GPUs (tests/gpu/nccl_all_reduce.cpp).
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "host_fault_backend.h"
#include "runtime/backend.h"
#include "runtime/comm/launch_environment.h"
#include "runtime/comm/nccl_reducer.h"
#include "runtime/cuda/plugin_abi.h"

using namespace scion;

namespace {

// Rank 0 of two whose peer's all_gather answers are scripted, one per call.
class ScriptedPeer final : public runtime::Communicator {
 public:
  explicit ScriptedPeer(std::vector<Result<std::string>> answers) : answers_(std::move(answers)) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Status all_reduce_sum(std::span<float>) override { return Status::ok(); }
  Status all_reduce_sum(std::span<double>) override { return Status::ok(); }
  Status agree(const Status& local) override { return local; }
  Result<std::vector<std::string>> gather(std::string_view) override {
    return Status(StatusCode::kInternal, "ScriptedPeer cannot gather");
  }
  Result<std::vector<std::string>> all_gather(std::string_view local) override {
    sent.emplace_back(local);
    if (calls_ >= answers_.size()) return Status(StatusCode::kInternal, "no scripted answer left");
    Result<std::string>& peer = answers_[calls_++];
    if (!peer) return peer.status();
    return std::vector<std::string>{std::string(local), *peer};
  }
  std::vector<std::string> sent;

 private:
  std::vector<Result<std::string>> answers_;
  std::size_t calls_ = 0;
};

// Launch variables set for one test, removed after it.
class Environment {
 public:
  ~Environment() {
    for (const std::string& name : names_) unsetenv(name.c_str());
  }
  void set(const std::string& name, const std::string& value) {
    setenv(name.c_str(), value.c_str(), 1);
    names_.push_back(name);
  }

 private:
  std::vector<std::string> names_;
};

// A plugin table whose NCCL entries do what a test scripts (no CUDA, no NCCL): the
// agreement of make_nccl_reducer's steps 2 and 3 is tested without GPUs.
struct FakeNccl {
  bool prepare_fails = false;
  bool init_fails = false;
  int prepared = 0, inits = 0, destroyed = 0;
  int init_timeout_ms = -1;
};
FakeNccl fake;
int fake_state;  // what nccl_prepare hands out

void copy_error(const char* text, char* error, size_t capacity) {
  std::snprintf(error, capacity, "%s", text);
}
int fake_uuid(int, char* out, size_t capacity) {
  copy_error("00112233445566778899aabbccddeeff", out, capacity);
  return 0;
}
int fake_unique_id(unsigned char* id, char*, size_t) {
  for (int i = 0; i < SCION_NCCL_ID_BYTES; ++i) id[i] = static_cast<unsigned char>(i);
  return 0;
}
int fake_prepare(int, void** comm, char* error, size_t capacity) {
  ++fake.prepared;
  *comm = nullptr;
  if (fake.prepare_fails) {
    copy_error("cudaStreamCreate: out of memory", error, capacity);
    return -1;
  }
  *comm = &fake_state;
  return 0;
}
int fake_init(void*, const unsigned char*, int, int, int timeout_ms, char* error, size_t capacity) {
  ++fake.inits;
  fake.init_timeout_ms = timeout_ms;
  if (!fake.init_fails) return 0;
  copy_error("ncclCommInitRank (rank 0 of 2): timed out after 7 s waiting for the other ranks",
             error, capacity);
  return -1;
}
int fake_all_reduce(void*, float* const*, const size_t*, size_t, char*, size_t) { return 0; }
void fake_destroy(void* comm) {
  if (comm != nullptr) ++fake.destroyed;
}
const ScionCudaPlugin kFakePlugin = {SCION_CUDA_PLUGIN_ABI_VERSION,
                                     nullptr,
                                     nullptr,
                                     nullptr,
                                     fake_uuid,
                                     fake_unique_id,
                                     fake_prepare,
                                     fake_init,
                                     fake_all_reduce,
                                     fake_destroy};

// make_nccl_reducer on rank 0 of two, with the fake plugin and a 7 s wait; `device` is
// a backend that says it is CUDA (HostFaultBackend).
Result<std::unique_ptr<runtime::DeviceReducer>> start_nccl(ScriptedPeer& peer,
                                                           std::string* why_not) {
  static test::HostFaultBackend device(runtime::CpuBackendOptions{.threads = 1});
  fake = FakeNccl{};
  return runtime::make_nccl_reducer(peer, device, &kFakePlugin, 0, 7000, "", why_not);
}

}  // namespace

TEST_CASE("NCCL starts when every rank agrees before and after the start", "[comm]") {
  ScriptedPeer peer({std::string("1 other-gpu"), std::string("1"), std::string()});
  std::string why_not;
  auto reducer = start_nccl(peer, &why_not);
  REQUIRE(reducer.is_ok());
  CHECK(*reducer != nullptr);
  CHECK(why_not.empty());
  REQUIRE(peer.sent.size() == 3);
  // Rank 0's answer before the start carries the unique id to the others.
  CHECK(peer.sent[1].size() == 1 + SCION_NCCL_ID_BYTES);
  CHECK(peer.sent[1][0] == '1');
  CHECK(peer.sent[2].empty());  // started
  CHECK(fake.init_timeout_ms == 7000);
  reducer->reset();
  CHECK(fake.destroyed == 1);
}

TEST_CASE("a rank that cannot prepare NCCL stops every rank before the collective start",
          "[comm]") {
  ScriptedPeer peer(
      {std::string("1 other-gpu"), std::string("0rank 1: cudaSetDevice(1): no device")});
  std::string why_not;
  auto reducer = start_nccl(peer, &why_not);
  REQUIRE(!reducer.is_ok());
  CHECK(reducer.status().code() == StatusCode::kUnavailable);  // exit 3
  CHECK(reducer.status().message().find("rank 1: cudaSetDevice(1): no device") !=
        std::string::npos);
  CHECK(reducer.status().message().find("SCION_NCCL_INIT_TIMEOUT_S") != std::string::npos);
  CHECK(fake.inits == 0);  // nobody entered ncclCommInitRank to wait for rank 1
  CHECK(fake.destroyed == 1);
}

TEST_CASE("this rank failing to prepare tells the others, then stops", "[comm]") {
  ScriptedPeer peer({std::string("1 other-gpu"), std::string("1")});
  std::string why_not;
  test::HostFaultBackend device(runtime::CpuBackendOptions{.threads = 1});
  fake = FakeNccl{.prepare_fails = true};
  auto reducer = runtime::make_nccl_reducer(peer, device, &kFakePlugin, 0, 7000, "", &why_not);
  REQUIRE(!reducer.is_ok());
  CHECK(reducer.status().message().find("rank 0: cudaStreamCreate: out of memory") !=
        std::string::npos);
  REQUIRE(peer.sent.size() == 2);
  CHECK(peer.sent[1] == "0rank 0: cudaStreamCreate: out of memory");
  CHECK(fake.inits == 0);
}

TEST_CASE("a start that fails or times out on any rank is an error on every rank", "[comm]") {
  SECTION("the peer timed out") {
    ScriptedPeer peer({std::string("1 other-gpu"), std::string("1"),
                       std::string("rank 1: ncclCommInitRank (rank 1 of 2): timed out")});
    std::string why_not;
    auto reducer = start_nccl(peer, &why_not);
    REQUIRE(!reducer.is_ok());
    CHECK(reducer.status().code() == StatusCode::kUnavailable);
    CHECK(reducer.status().message().find("rank 1: ncclCommInitRank (rank 1 of 2): timed out") !=
          std::string::npos);
    CHECK(fake.destroyed == 1);
  }
  SECTION("this rank timed out: the others hear why") {
    ScriptedPeer peer({std::string("1 other-gpu"), std::string("1"), std::string()});
    std::string why_not;
    test::HostFaultBackend device(runtime::CpuBackendOptions{.threads = 1});
    fake = FakeNccl{.init_fails = true};
    auto reducer = runtime::make_nccl_reducer(peer, device, &kFakePlugin, 0, 7000, "", &why_not);
    REQUIRE(!reducer.is_ok());
    REQUIRE(peer.sent.size() == 3);
    CHECK(peer.sent[2].find("rank 0: ncclCommInitRank (rank 0 of 2): timed out after 7 s") == 0);
    CHECK(fake.destroyed == 1);
  }
}

TEST_CASE("the wait for NCCL's start comes from SCION_NCCL_INIT_TIMEOUT_S", "[comm]") {
  Environment env;
  CHECK(runtime::nccl_init_timeout_ms().value() == runtime::kDefaultNcclInitTimeoutS * 1000);
  env.set("SCION_NCCL_INIT_TIMEOUT_S", "5");
  CHECK(runtime::nccl_init_timeout_ms().value() == 5000);
  env.set("SCION_NCCL_INIT_TIMEOUT_S", "5s");
  const auto bad = runtime::nccl_init_timeout_ms();
  REQUIRE(!bad.is_ok());
  CHECK(bad.status().message().find("'5s'") != std::string::npos);
  // A rank with an unreadable value cannot take part: every rank takes the host path.
  ScriptedPeer peer({std::string("1 other-gpu")});
  std::string why_not;
  test::HostFaultBackend device(runtime::CpuBackendOptions{.threads = 1});
  auto reducer = runtime::make_nccl_reducer(peer, device, &kFakePlugin, 0, 7000,
                                            bad.status().message(), &why_not);
  REQUIRE(reducer.is_ok());
  CHECK(*reducer == nullptr);
  CHECK(why_not.find("rank 0: SCION_NCCL_INIT_TIMEOUT_S is '5s'") == 0);
}

TEST_CASE("NCCL serves only when every rank is ready on a GPU of its own", "[comm]") {
  CHECK(runtime::why_not_nccl({"1 aa", "1 bb", "1 cc"}).empty());
  CHECK(runtime::why_not_nccl({"1 aa", "1 bb", "1 aa"}) ==
        "rank 2 shares its GPU with a lower rank (more ranks than GPUs on a machine); NCCL needs "
        "one GPU per rank");
  CHECK(runtime::why_not_nccl({"1 aa", "0 rank 1: trains on the CPU"}) == "rank 1: trains on the CPU");
  CHECK(runtime::why_not_nccl({"0 rank 0: the CUDA plugin is not loaded", "0 rank 1: x"}) ==
        "rank 0: the CUDA plugin is not loaded");
  CHECK(runtime::why_not_nccl({"1 aa", ""}) == "rank 1 gave no answer");
}

TEST_CASE("ranks on the CPU take the host path after one all_gather", "[comm]") {
  std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  ScriptedPeer peer({std::string("1 some-gpu")});
  std::string why_not;
  auto reducer = runtime::make_nccl_reducer(peer, *cpu, &why_not);
  REQUIRE(reducer.is_ok());
  CHECK(*reducer == nullptr);
  CHECK(why_not == "rank 0: trains on the CPU");
  REQUIRE(peer.sent.size() == 1);  // no NCCL id was sent: the choice ended at step 1
  CHECK(peer.sent[0] == "0 rank 0: trains on the CPU");
}

TEST_CASE("a communicator failure while choosing is an error, not a fallback", "[comm]") {
  std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  ScriptedPeer peer({Status(StatusCode::kUnavailable, "rank 1 is gone")});
  std::string why_not;
  auto reducer = runtime::make_nccl_reducer(peer, *cpu, &why_not);
  REQUIRE(!reducer.is_ok());
  CHECK(reducer.status().code() == StatusCode::kUnavailable);
}

TEST_CASE("a rank's local rank comes from its launcher", "[comm]") {
  Environment env;
  // Started alone: no local rank, even if a stray variable says one.
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "3");
  CHECK(!runtime::local_rank().has_value());
  env.set("OMPI_COMM_WORLD_RANK", "5");
  env.set("OMPI_COMM_WORLD_SIZE", "8");
  CHECK(runtime::local_rank() == 3);
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "x");  // unreadable: the next launcher's variable
  env.set("MPI_LOCALRANKID", "1");
  CHECK(runtime::local_rank() == 1);
}
