#include "runtime/comm/mpi_communicator.h"

// The C API only: Open MPI's deprecated C++ bindings warn under -Wextra (and are unused).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

namespace scion::runtime {
namespace {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

Status unavailable(const char* what, int code) {
  return Status(StatusCode::kUnavailable,
                std::string(what) + " failed: " + mpi_error_text(code) + " (a rank of this job is gone)");
}

// What a rank is about to do collectively: which collective, of which element type, and
// over how many elements (0 where each rank sends its own number of bytes, which are
// exchanged before any are sent).
enum class Collective : long long { kAgree = 1, kSum, kGather, kAllGather };
enum class Element : long long { kInt = 1, kFloat, kDouble, kByte };

const char* collective_name(long long c) {
  switch (static_cast<Collective>(c)) {
    case Collective::kAgree:
      return "agreeing on a step's outcome";
    case Collective::kSum:
      return "summing values";
    case Collective::kGather:
      return "gathering results on rank 0";
    case Collective::kAllGather:
      return "exchanging results";
  }
  return "an unknown collective";
}

const char* element_name(long long e) {
  switch (static_cast<Element>(e)) {
    case Element::kInt:
      return "int";
    case Element::kFloat:
      return "float";
    case Element::kDouble:
      return "double";
    case Element::kByte:
      return "byte";
  }
  return "unknown";
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(int rank, int size) : rank_(rank), size_(size) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status all_reduce_sum(std::span<float> values) override {
    SCION_RETURN_IF_ERROR(check_signature(Collective::kSum, Element::kFloat, values.size()));
    return reduce_then_broadcast(values, MPI_FLOAT);
  }
  Status all_reduce_sum(std::span<double> values) override {
    SCION_RETURN_IF_ERROR(check_signature(Collective::kSum, Element::kDouble, values.size()));
    return reduce_then_broadcast(values, MPI_DOUBLE);
  }

  Status agree(const Status& local) override {
    SCION_RETURN_IF_ERROR(check_signature(Collective::kAgree, Element::kInt, 1));
    // The lowest failing rank (size_ when none), then its code and message from it.
    const int mine = local.is_ok() ? size_ : rank_;
    int first = size_;
    if (int rc = MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); rc != MPI_SUCCESS)
      return unavailable("agreeing on the step's outcome", rc);
    if (first == size_) return Status::ok();
    int code = static_cast<int>(local.code());
    std::string message = local.message();
    int length = static_cast<int>(message.size());
    if (int rc = MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD); rc != MPI_SUCCESS)
      return unavailable("sharing a rank's error", rc);
    if (int rc = MPI_Bcast(&length, 1, MPI_INT, first, MPI_COMM_WORLD); rc != MPI_SUCCESS)
      return unavailable("sharing a rank's error", rc);
    message.resize(static_cast<std::size_t>(length));
    if (int rc = MPI_Bcast(message.data(), length, MPI_CHAR, first, MPI_COMM_WORLD); rc != MPI_SUCCESS)
      return unavailable("sharing a rank's error", rc);
    if (first == rank_) return local;
    return Status(static_cast<StatusCode>(code), "rank " + std::to_string(first) + " failed: " + message);
  }

  Result<std::vector<std::string>> gather(std::string_view local) override {
    SCION_RETURN_IF_ERROR(check_signature(Collective::kGather, Element::kByte, 0));
    // Sizes first (64-bit: a shard's outputs may pass 2 GiB), then each rank's bytes to
    // rank 0 in int-sized pieces, one rank after another.
    const auto mine = static_cast<long long>(local.size());
    std::vector<long long> sizes(rank_ == 0 ? static_cast<std::size_t>(size_) : 0);
    if (int rc = MPI_Gather(&mine, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        rc != MPI_SUCCESS)
      return unavailable("gathering the ranks' results", rc);
    constexpr std::size_t kPiece = static_cast<std::size_t>(INT_MAX) / 2;
    constexpr int kTag = 17;
    if (rank_ != 0) {
      for (std::size_t offset = 0; offset < local.size(); offset += kPiece) {
        const int count = static_cast<int>(std::min(kPiece, local.size() - offset));
        if (int rc = MPI_Send(local.data() + offset, count, MPI_CHAR, 0, kTag, MPI_COMM_WORLD);
            rc != MPI_SUCCESS)
          return unavailable("sending this rank's results to rank 0", rc);
      }
      return std::vector<std::string>{};
    }
    std::vector<std::string> all(static_cast<std::size_t>(size_));
    all[0] = std::string(local);
    for (int from = 1; from < size_; ++from) {
      std::string& bytes = all[static_cast<std::size_t>(from)];
      bytes.resize(static_cast<std::size_t>(sizes[static_cast<std::size_t>(from)]));
      for (std::size_t offset = 0; offset < bytes.size(); offset += kPiece) {
        const int count = static_cast<int>(std::min(kPiece, bytes.size() - offset));
        if (int rc = MPI_Recv(bytes.data() + offset, count, MPI_CHAR, from, kTag, MPI_COMM_WORLD,
                              MPI_STATUS_IGNORE);
            rc != MPI_SUCCESS)
          return unavailable(("receiving rank " + std::to_string(from) + "'s results").c_str(), rc);
      }
    }
    return all;
  }

  Result<std::vector<std::string>> all_gather(std::string_view local) override {
    SCION_RETURN_IF_ERROR(check_signature(Collective::kAllGather, Element::kByte, 0));
    const auto mine = static_cast<long long>(local.size());
    std::vector<long long> sizes(static_cast<std::size_t>(size_));
    if (int rc = MPI_Allgather(&mine, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD);
        rc != MPI_SUCCESS)
      return unavailable("exchanging the ranks' results", rc);
    // Each rank broadcasts its bytes in turn, in int-sized pieces.
    constexpr std::size_t kPiece = static_cast<std::size_t>(INT_MAX) / 2;
    std::vector<std::string> all(static_cast<std::size_t>(size_));
    for (int from = 0; from < size_; ++from) {
      std::string& bytes = all[static_cast<std::size_t>(from)];
      if (from == rank_)
        bytes = std::string(local);
      else
        bytes.resize(static_cast<std::size_t>(sizes[static_cast<std::size_t>(from)]));
      for (std::size_t offset = 0; offset < bytes.size(); offset += kPiece) {
        const int count = static_cast<int>(std::min(kPiece, bytes.size() - offset));
        if (int rc = MPI_Bcast(bytes.data() + offset, count, MPI_CHAR, from, MPI_COMM_WORLD);
            rc != MPI_SUCCESS)
          return unavailable(("sharing rank " + std::to_string(from) + "'s results").c_str(), rc);
      }
    }
    return all;
  }

 private:
  // Every collective starts with this one, the same call on every rank whichever
  // collective it is about to run: the largest and smallest (collective, element type,
  // count) over the ranks. When they differ the ranks are out of step (another spec,
  // another plan, a bug), and every rank returns the same error before any rank reads or
  // writes a buffer sized for another's count.
  Status check_signature(Collective collective, Element element, std::size_t count) {
    const long long mine[3] = {static_cast<long long>(collective), static_cast<long long>(element),
                               static_cast<long long>(count)};
    long long bounds[6] = {mine[0], mine[1], mine[2], -mine[0], -mine[1], -mine[2]};
    if (int rc = MPI_Allreduce(MPI_IN_PLACE, bounds, 6, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        rc != MPI_SUCCESS)
      return unavailable("checking that the ranks run the same collective", rc);
    if (bounds[0] == -bounds[3] && bounds[1] == -bounds[4] && bounds[2] == -bounds[5])
      return Status::ok();
    std::string what;
    if (bounds[0] != -bounds[3])
      what = std::string("one rank is ") + collective_name(-bounds[3]) + ", another " +
             collective_name(bounds[0]);
    else if (bounds[1] != -bounds[4])
      what = std::string(collective_name(bounds[0])) + " with elements of type " +
             element_name(-bounds[4]) + " on one rank and " + element_name(bounds[1]) +
             " on another";
    else
      what = std::string(collective_name(bounds[0])) + " over " + std::to_string(-bounds[5]) +
             " elements on one rank and " + std::to_string(bounds[2]) + " on another";
    return Status(StatusCode::kInternal,
                  "the ranks are out of step: " + what + " (this rank: " + std::to_string(count) +
                      " " + element_name(mine[1]) +
                      " elements); nothing was exchanged. Every rank must run the same scion "
                      "on the same spec, data and store");
  }

  // MPI_Allreduce may add in a different order on different ranks (its algorithms do for
  // 3 ranks), which would let the ranks' parameters drift apart by rounding. Reducing to
  // rank 0 and broadcasting gives every rank rank 0's bits.
  template <typename T>
  Status reduce_then_broadcast(std::span<T> values, MPI_Datatype type) {
    // MPI counts are int: large gradient sets go in chunks.
    constexpr std::size_t kChunk = static_cast<std::size_t>(INT_MAX) / 2;
    for (std::size_t offset = 0; offset < values.size(); offset += kChunk) {
      const int count = static_cast<int>(std::min(kChunk, values.size() - offset));
      T* data = values.data() + offset;
      int rc = rank_ == 0 ? MPI_Reduce(MPI_IN_PLACE, data, count, type, MPI_SUM, 0, MPI_COMM_WORLD)
                          : MPI_Reduce(data, nullptr, count, type, MPI_SUM, 0, MPI_COMM_WORLD);
      if (rc != MPI_SUCCESS) return unavailable("summing gradients over the ranks", rc);
      rc = MPI_Bcast(data, count, type, 0, MPI_COMM_WORLD);
      if (rc != MPI_SUCCESS) return unavailable("sharing the summed gradients", rc);
    }
    return Status::ok();
  }

  int rank_, size_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> make_mpi_communicator() {
  if (int rc = MPI_Init(nullptr, nullptr); rc != MPI_SUCCESS)
    return Status(StatusCode::kUnavailable, "MPI_Init failed: " + mpi_error_text(rc));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<Communicator>(std::make_unique<MpiCommunicator>(rank, size));
}

void finalize_mpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

}  // namespace scion::runtime
