// test_pch.h: the headers nearly every test file includes, compiled once as a precompiled header
// shared by all test executables (CMakeLists.txt: target_precompile_headers ... REUSE_FROM), because
// parsing GoogleTest and nlohmann/json again in each of ~75 test files was a large share of the
// build's CPU time on the 2-core CI machine (docs/benchmarks.md, "Test suite"). Test files still
// include what they use; this only makes it cheaper.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
