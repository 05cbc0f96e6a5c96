#include "lineage/object_store.h"

#include "lineage/digest.h"

namespace scion::lineage {

namespace fs = std::filesystem;

fs::path ObjectStore::path_for(const std::string& digest) const {
  return dir_ / digest.substr(0, 2) / digest.substr(2);
}

bool ObjectStore::contains(const std::string& digest) const {
  return env_.file_exists(path_for(digest));
}

Status ObjectStore::put(const std::string& digest, std::span<const std::byte> bytes) {
  const fs::path path = path_for(digest);
  if (env_.file_exists(path)) return Status::ok();  // identical content is stored once
  SCION_RETURN_IF_ERROR(env_.create_dirs(path.parent_path()));
  const std::span<const std::byte> pieces[] = {bytes};
  return write_file_atomically(env_, path, pieces);
}

Result<std::unique_ptr<MappedRegion>> ObjectStore::map(const std::string& digest) const {
  return env_.map_file(path_for(digest));
}

Status ObjectStore::remove(const std::string& digest) { return env_.remove_file(path_for(digest)); }

bool is_temporary_object_file(const fs::path& path) {
  return path.filename().string().find(".tmp.") != std::string::npos;
}

Result<ObjectStore::Listing> ObjectStore::list() const {
  auto files = env_.list_files(dir_);
  if (!files.is_ok()) return files.status();
  Listing listing;
  for (const fs::path& file : *files) {
    const std::string folder = file.parent_path().filename().string();
    const std::string digest = folder + file.filename().string();
    if (is_temporary_object_file(file)) {
      listing.temporaries.push_back(file);
    } else if (folder.size() == 2 && file.parent_path().parent_path() == dir_ &&
               is_digest(digest)) {
      listing.digests.push_back(digest);
    } else {
      listing.strays.push_back(file);
    }
  }
  return listing;
}

}  // namespace scion::lineage
