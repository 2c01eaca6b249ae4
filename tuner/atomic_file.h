// atomic_file.h: writes a whole file so that it is either the new text or what was there before: the text goes
// to a temporary file beside it, then a rename replaces it. A failed write (a full disk, a quota) removes the
// temporary file and leaves the old one as it was: an export, report or recording that fails never destroys the
// one it would have replaced. What is not a regular file named directly is written in place, as a plain write
// would: a device (`--out /dev/null` never replaces the device), a pipe, and a symbolic link (`/dev/stdout` leads
// to whatever stdout is redirected to, which a rename would replace, losing what `>>` appended to). A file the
// caller may not write is refused, not replaced. Inline: the
// replay fuzzer compiles replay_data.cpp without the rest of the library.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace tuner {

/// Returns "" when the file holds `text`, else why not. *could_not_open is set when nothing could be opened at all
/// (a folder that does not exist or cannot be written: usually the caller's bad input).
inline std::string write_file_atomically(const std::string& path, const std::string& text,
                                         bool* could_not_open = nullptr) {
  namespace fs = std::filesystem;
  if (could_not_open) *could_not_open = false;
  std::error_code ec;
  const fs::path target = path;
  const bool link = fs::is_symlink(target, ec);
  const fs::file_status st = fs::status(target, ec);
  if (fs::is_directory(st)) {
    if (could_not_open) *could_not_open = true;
    return "it is a directory";
  }
  const auto written = [&](std::ofstream& f, const std::string& where) -> std::string {
    f << text;
    f.close();
    if (f) return "";
    return std::string(std::strerror(errno)) + " (writing " + std::to_string(text.size()) + " bytes to '" + where +
           "'; the disk may be full)";
  };
  if (link || (fs::exists(st) && !fs::is_regular_file(st))) {  // a link, a device, a pipe: written in place
    std::ofstream f(target, std::ios::binary | std::ios::trunc);
    if (!f) {
      if (could_not_open) *could_not_open = true;
      return std::strerror(errno);
    }
    return written(f, target.string());
  }
  // A file the user may not write is not replaced: the rename would succeed wherever the folder is writable.
  if (fs::exists(st) && ::access(target.c_str(), W_OK) != 0) {
    if (could_not_open) *could_not_open = true;
    return std::strerror(errno);
  }
  const std::string tmp = target.string() + ".tmp." + std::to_string(::getpid());
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (!f) {
    if (could_not_open) *could_not_open = true;
    return std::strerror(errno);
  }
  if (std::string why = written(f, tmp); !why.empty()) {
    fs::remove(tmp, ec);
    return why;
  }
  if (fs::exists(st)) fs::permissions(tmp, st.permissions(), ec);  // the replaced file's mode is kept
  fs::rename(tmp, target, ec);
  if (ec) {
    // A folder that refuses the rename (sticky, read-only) is the caller's choice of path, like one that refuses
    // the temporary file.
    if (could_not_open && (ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted ||
                           ec == std::errc::read_only_file_system))
      *could_not_open = true;
    const std::string why = "renaming '" + tmp + "': " + ec.message();
    fs::remove(tmp, ec);
    return why;
  }
  return "";
}

}  // namespace tuner
