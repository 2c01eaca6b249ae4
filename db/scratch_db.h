// A scratch database file in the system's temporary directory, removed with its WAL, shared-memory and journal
// files when the object goes: the staging file `import` writes its records into, and the upgraded copy `merge`
// reads an older database through.
#pragma once

#include <string>

namespace tuner::db {

class ScratchDbFile {
 public:
  /// A fresh path named PREFIX-PID-N.db (nothing there yet: a leftover of a dead process is removed).
  explicit ScratchDbFile(const std::string& prefix);
  ~ScratchDbFile();
  ScratchDbFile(const ScratchDbFile&) = delete;
  ScratchDbFile& operator=(const ScratchDbFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  void remove() const;
  std::string path_;
};

}  // namespace tuner::db
