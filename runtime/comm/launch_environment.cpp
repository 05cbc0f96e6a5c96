#include "runtime/comm/launch_environment.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace scion::runtime {
namespace {

std::optional<int> int_from_env(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  int value = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, error] = std::from_chars(text, end, value);
  if (error != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

std::optional<LaunchedRank> launched_rank() {
  // Pairs of (rank, size) variables, most specific launcher first. Not Slurm's own
  // SLURM_PROCID: a batch script sets it without having started any ranks.
  static const char* const kPairs[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"}};
  for (const auto& pair : kPairs) {
    const std::optional<int> rank = int_from_env(pair[0]), size = int_from_env(pair[1]);
    if (rank && size && *size >= 1 && *rank >= 0 && *rank < *size) return LaunchedRank{*rank, *size};
  }
  return std::nullopt;
}

std::optional<int> local_rank() {
  if (!launched_rank()) return std::nullopt;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const std::optional<int> local = int_from_env(name); local && *local >= 0) return local;
  return std::nullopt;
}

}  // namespace scion::runtime
