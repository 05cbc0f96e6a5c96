// Run under `mpirun -np 2` by tests/cli/test_distributed_agreement.py: every collective
// refuses ranks that pass different element counts, element types or collectives (exit 3
// in scion: kInternal), on every rank, without reading or writing out of bounds (the buffers
// are sized exactly, so AddressSanitizer would see any overrun); the ranks stay in step
// afterwards. Prints one line per case; exits 0 when every case went as expected.
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/comm/value_agreement.h"

using namespace scion;
using namespace scion::runtime;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what, const Status& status) {
  std::printf("%s: %s (%s)\n", ok ? "ok" : "FAIL", what.c_str(),
              status.is_ok() ? "ok" : status.message().c_str());
  if (!ok) ++failures;
}

}  // namespace

int main() {
  auto world = world_communicator();
  if (!world) {
    std::printf("FAIL: %s\n", world.status().message().c_str());
    return 1;
  }
  Communicator& comm = **world;
  if (comm.size() != 2) {
    std::printf("run me with mpirun -np 2\n");
    return 77;
  }
  const int rank = comm.rank();

  // Rank 0 sums 1024 floats, rank 1 512: the overflow issue #29 reported, now refused.
  std::vector<float> floats(rank == 0 ? 1024 : 512, 1.0f);
  Status sized = comm.all_reduce_sum(std::span<float>(floats));
  expect(sized.code() == StatusCode::kInternal &&
             sized.message().find("over 512 elements on one rank and 1024") != std::string::npos,
         "different element counts are refused on every rank", sized);

  // The same count, another element type.
  std::vector<float> f(8, 1.0f);
  std::vector<double> d(8, 1.0);
  Status typed = rank == 0 ? comm.all_reduce_sum(std::span<float>(f))
                           : comm.all_reduce_sum(std::span<double>(d));
  expect(typed.code() == StatusCode::kInternal &&
             typed.message().find("elements of type") != std::string::npos,
         "different element types are refused", typed);

  // Different collectives at the same point.
  Status other;
  if (rank == 0) {
    other = comm.agree(Status::ok());
  } else {
    auto gathered = comm.all_gather("x");
    other = gathered ? Status::ok() : gathered.status();
  }
  expect(other.code() == StatusCode::kInternal, "different collectives are refused", other);

  // Still in step: a matching sum works and gives every rank the same total.
  std::vector<float> ones(16, 1.0f);
  Status summed = comm.all_reduce_sum(std::span<float>(ones));
  expect(summed.is_ok() && ones[0] == 2.0f && ones[15] == 2.0f, "a matching sum still works",
         summed);

  // Start-up values: the same on both ranks agree; different ones name the difference.
  Status same = agree_on_values(comm, {{"scion's version", "1"}, {"dataset 'a'", "abc"}});
  expect(same.is_ok(), "equal values agree", same);
  Status differ =
      agree_on_values(comm, {{"scion's version", "1"}, {"dataset 'a'", rank == 0 ? "abc" : "abd"}});
  expect(
      differ.code() == StatusCode::kSpecError &&
          differ.message().find("dataset 'a': rank 0 has abc, rank 1 has abd") != std::string::npos,
      "different values are a spec error naming them", differ);

  finalize_world_communicator();
  return failures == 0 ? 0 : 1;
}
