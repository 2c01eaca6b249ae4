// What every fuzz target of tests/fuzz/ shares: the rule that a parser may throw the exception
// types it documents (here std::invalid_argument and what derives from it: the planner's
// SpecError) and nothing else. Anything else, or a broken invariant, aborts with one line naming
// the input's excerpt, which the engine (libFuzzer or tests/fuzz/fuzz_driver.cpp) turns into a
// saved failing input.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeinfo>

namespace tuner::fuzz {

/// The input as text, and an escaped excerpt of it for messages.
inline std::string as_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

inline std::string excerpt(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && out.size() < 200; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > 200) out += "...";
  return out;
}

[[noreturn]] inline void fail(const std::string& what, std::string_view input) {
  std::fprintf(stderr, "\n==fuzz== %s\n==fuzz== input (%zu bytes): %s\n", what.c_str(), input.size(),
               excerpt(input).c_str());
  std::abort();
}

/// Runs `parse`; a std::invalid_argument (documented) is fine, any other exception aborts.
/// With `max_message` > 0 the rejection must also be one line of at most that many bytes (for
/// parsers that promise to cut what they echo). Returns true when `parse` returned normally.
template <class F>
bool parses(std::string_view input, F&& parse, size_t max_message = 0) {
  try {
    parse();
    return true;
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    if (max_message > 0 && m.find('\n') != std::string::npos)
      fail("rejection message spans lines: " + excerpt(m), input);
    if (max_message > 0 && m.size() > max_message)
      fail("rejection message of " + std::to_string(m.size()) + " bytes: " + excerpt(m), input);
    return false;
  } catch (const std::exception& e) {
    fail(std::string("undocumented exception ") + typeid(e).name() + ": " + excerpt(e.what()), input);
  } catch (...) {
    fail("undocumented exception of a non-std type", input);
  }
}

}  // namespace tuner::fuzz
