// atomic_file.h: writes a whole file so that it is either the new text or what was there before: the text goes
// to PATH.tmp beside it, then a rename replaces PATH. A failed write (a full disk, a quota) removes the
// temporary file and leaves PATH as it was: an export, report or recording that fails never destroys the one it
// would have replaced. Inline: the replay fuzzer compiles replay_data.cpp without the rest of the library.
#pragma once

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace tuner {

/// Returns "" when PATH holds `text`, else why not. *could_not_open is set when the temporary file could not be
/// created at all (a folder that does not exist or cannot be written: usually the caller's bad input).
inline std::string write_file_atomically(const std::string& path, const std::string& text,
                                         bool* could_not_open = nullptr) {
  namespace fs = std::filesystem;
  if (could_not_open) *could_not_open = false;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (could_not_open) *could_not_open = true;
    return "it is a directory";
  }
  const std::string tmp = path + ".tmp";
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (!f) {
    if (could_not_open) *could_not_open = true;
    return std::strerror(errno);
  }
  f << text;
  f.close();
  if (!f) {
    const std::string why = std::string(std::strerror(errno)) + " (writing " + std::to_string(text.size()) +
                            " bytes; the disk may be full)";
    fs::remove(tmp, ec);
    return why;
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    const std::string why = "renaming '" + tmp + "': " + ec.message();
    fs::remove(tmp, ec);
    return why;
  }
  return "";
}

}  // namespace tuner
