// conv_wgmma_schedule.cuh: the work schedule and TMA coordinates of the Hopper implicit-GEMM conv2d
// (conv2d_wgmma.cuh), as plain integer math that compiles both as device code (NVRTC) and as host C++:
// the CPU tests include this file directly, emulate the kernel's TMA boxes with it and check that
// every output is computed once and equals a direct convolution.
//
// The GEMM view: M = N*P*Q output pixels, N = K filters, K = R*S*C taps. A block tile is a rectangle of
// tile_h x tile_w output pixels of one image (bm = tile_h * tile_w GEMM rows; local row m is pixel
// (p0 + m / tile_w, q0 + m % tile_w), rows past P or Q are computed and never stored) times bn filters.
// A k-tile is 64 channels of one filter tap (r, s): k-tile kt is tap r = kt / (S*CC), s = kt / CC % S,
// channels c0 = 64 * (kt % CC), CC = ceil(C / 64) (channels past C are zero-filled by TMA on both
// operands). The A box of a (tile, k-tile) is the input X as a 4-D tensor {C, W, H, N}, box
// {64, tile_w * stride, tile_h * stride, 1} with element strides {1, stride, stride, 1} (tile_w x
// tile_h pixels, each 128 bytes), starting at (c0, q0*stride - pad + s*dilation, p0*stride - pad +
// r*dilation, n): TMA zero-fills the taps that fall outside the image, the padding. A box wholly
// outside the image (its tap misses every pixel of the tile) is not fetched and its k-tile is not
// multiplied (zero contributes nothing). The B box is the filter F as {C, S, R, K}, box {64, 1, 1, bn}
// at (c0, s, r, k0): bn rows of 128 bytes, K-major like A.
// Units: tiles_k filter tiles fastest (they share the pixel tile's input in L2), then pixel tiles
// q, p and images; a CTA runs unit blockIdx.x, or, persistent, blockIdx.x, + gridDim.x, ...
#pragma once

#if defined(__CUDACC__)
#define CONVW_HD __host__ __device__ __forceinline__
#else
#define CONVW_HD inline
#endif

struct ConvWgmmaGeom {
  int n, h, w, c, k, r, s, stride, pad, dilation, p, q;  // the conv (conv2d_igemm's scalars)
  int tile_h, tile_w, bn;                                // block tile: tile_h x tile_w pixels x bn filters
  int tiles_p, tiles_q, tiles_k;                         // block tiles along P, Q and K
  int chunks;                                            // 64-channel chunks per tap: ceil(C / 64)
  int k_tiles;                                           // R * S * chunks
};

struct ConvWgmmaUnit {
  int n, p0, q0, k0;  // image, first output row and column of the pixel tile, first filter
};

struct ConvWgmmaTap {
  int r, s, c0;  // filter tap and first channel of a k-tile
};

CONVW_HD ConvWgmmaGeom conv_wgmma_geom(int n, int h, int w, int c, int k, int r, int s, int stride, int pad,
                                       int dilation, int p, int q, int tile_h, int tile_w, int bn) {
  ConvWgmmaGeom g;
  g.n = n, g.h = h, g.w = w, g.c = c, g.k = k, g.r = r, g.s = s;
  g.stride = stride, g.pad = pad, g.dilation = dilation, g.p = p, g.q = q;
  g.tile_h = tile_h, g.tile_w = tile_w, g.bn = bn;
  g.tiles_p = (p + tile_h - 1) / tile_h;
  g.tiles_q = (q + tile_w - 1) / tile_w;
  g.tiles_k = (k + bn - 1) / bn;
  g.chunks = (c + 63) / 64;
  g.k_tiles = r * s * g.chunks;
  return g;
}

// Units and their decomposition in 32-bit integers: the producer thread runs this after giving up its
// registers (setmaxnreg.dec 40), and there are fewer units than output elements (< 2^31, conv2d's limit).
CONVW_HD int conv_wgmma_units(const ConvWgmmaGeom& g) { return g.n * g.tiles_p * g.tiles_q * g.tiles_k; }

CONVW_HD ConvWgmmaUnit conv_wgmma_unit(const ConvWgmmaGeom& g, int u) {
  ConvWgmmaUnit t;
  t.k0 = u % g.tiles_k * g.bn;
  u /= g.tiles_k;
  t.q0 = u % g.tiles_q * g.tile_w;
  u /= g.tiles_q;
  t.p0 = u % g.tiles_p * g.tile_h;
  t.n = u / g.tiles_p;
  return t;
}

CONVW_HD ConvWgmmaTap conv_wgmma_tap(const ConvWgmmaGeom& g, int kt) {
  ConvWgmmaTap t;
  t.r = kt / (g.s * g.chunks);
  t.s = kt / g.chunks % g.s;
  t.c0 = kt % g.chunks * 64;
  return t;
}

// The A box's first input row and column (its coordinates 2 and 1; may be negative: zero fill).
CONVW_HD int conv_wgmma_box_h(const ConvWgmmaGeom& g, const ConvWgmmaUnit& u, const ConvWgmmaTap& t) {
  return u.p0 * g.stride - g.pad + t.r * g.dilation;
}
CONVW_HD int conv_wgmma_box_w(const ConvWgmmaGeom& g, const ConvWgmmaUnit& u, const ConvWgmmaTap& t) {
  return u.q0 * g.stride - g.pad + t.s * g.dilation;
}

// Whether the tap misses the image for every pixel of the tile: its A box is wholly outside the input
// (not fetched; the k-tile adds nothing to the tile).
CONVW_HD bool conv_wgmma_box_outside(const ConvWgmmaGeom& g, const ConvWgmmaUnit& u, const ConvWgmmaTap& t) {
  const int h0 = conv_wgmma_box_h(g, u, t), w0 = conv_wgmma_box_w(g, u, t);
  const int h1 = h0 + (g.tile_h - 1) * g.stride, w1 = w0 + (g.tile_w - 1) * g.stride;
  return h0 >= g.h || h1 < 0 || w0 >= g.w || w1 < 0;
}

// The k-tiles of the unit that are fetched and multiplied (its ring slots): those whose box is not
// wholly outside the input.
CONVW_HD int conv_wgmma_loaded_k_tiles(const ConvWgmmaGeom& g, const ConvWgmmaUnit& u) {
  int n = 0;
  for (int kt = 0; kt < g.k_tiles; ++kt) n += conv_wgmma_box_outside(g, u, conv_wgmma_tap(g, kt)) ? 0 : 1;
  return n;
}

// The output row (n*P + p)*Q + q of local GEMM row m of the unit's tile, or -1 past P or Q.
CONVW_HD long long conv_wgmma_out_row(const ConvWgmmaGeom& g, const ConvWgmmaUnit& u, int m) {
  const int p = u.p0 + m / g.tile_w, q = u.q0 + m % g.tile_w;
  if (p >= g.p || q >= g.q) return -1;
  return (static_cast<long long>(u.n) * g.p + p) * g.q + q;
}
