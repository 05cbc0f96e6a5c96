// How the ranks choose between NCCL and the host path for the gradient sums
// (runtime/comm/nccl_reducer.h), and which GPU a rank takes (launch_environment.h), on
// any machine: the NCCL calls themselves need 2 GPUs (tests/gpu/nccl_all_reduce.cpp).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/comm/launch_environment.h"
#include "runtime/comm/nccl_reducer.h"

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

}  // namespace

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
