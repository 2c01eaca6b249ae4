// test_pch_owner.cpp: the source of the tiny executable that builds tests/test_pch.h once for every
// test executable (CMakeLists.txt, REUSE_FROM tests_pch). It is an executable, not a library, so
// its precompiled header is built with the test executables' flags (-fPIE); it is never run.
int main() { return 0; }
