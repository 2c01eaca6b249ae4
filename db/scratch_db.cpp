#include "db/scratch_db.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <system_error>

namespace tuner::db {

ScratchDbFile::ScratchDbFile(const std::string& prefix) {
  static std::atomic<int> n{0};
  path_ = (std::filesystem::temp_directory_path() /
           (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".db"))
              .string();
  remove();
}

ScratchDbFile::~ScratchDbFile() { remove(); }

void ScratchDbFile::remove() const {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path_ + suffix, ec);
}

}  // namespace tuner::db
