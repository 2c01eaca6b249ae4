// tensor_map.cuh: the driver's CUtensorMap as a kernel argument type (TMA kernels and their reference).
#pragma once

// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned, passed by value as a grid constant.
struct alignas(64) TensorMap { unsigned long long opaque[16]; };
