// conv_patch_layout.cuh: the index math of the patch conv2d (conv2d_patch_tc.cuh), for convolutions
// whose few input channels (the stem's C = 3) make every 16-byte im2col load straddle filter taps.
// Plain integer math that compiles both as device code (NVRTC) and as host C++: the CPU tests include
// this file and rebuild the kernel's shared tiles with it against a direct convolution.
//
// A block tile is tp x tq output pixels of one image (local pixel m is (p0 + m / tq, q0 + m % tq);
// pixels past P or Q are computed and never stored) times bn filters. The block copies the input patch
// those pixels read, ph x pw pixels of C channels (zero outside the image), to shared memory once, then
// writes the im2col tile A [tp*tq][kp] from it (tap k of pixel m is patch element base(m) + koff(k)),
// where kp is the reduction R*S*C rounded up to 16 (taps past R*S*C are zero), and multiplies it with
// the filter tile B [bn][kp] (loaded once per block) on mma.sync. Rows of A and B are lda = kp + 8
// elements apart: an odd number of 16-byte chunks, so ldmatrix's eight rows hit eight bank groups.
// Work: pixel tiles q fastest, then p, then images; gridDim.y runs over the filter tiles.
#pragma once

#if defined(__CUDACC__)
#define CONVP_HD __host__ __device__ __forceinline__
#else
#define CONVP_HD inline
#endif

struct ConvPatchGeom {
  int n, h, w, c, k, r, s, stride, pad, dilation, p, q;  // the conv (conv2d_igemm's scalars)
  int tp, tq, bn;                                        // block tile: tp x tq pixels x bn filters
  int kg, kp, lda;                                       // taps R*S*C, rounded up to 16, shared row pitch
  int ph, pw;                                            // the patch: input rows and columns
  int tiles_p, tiles_q, tiles_k;                         // block tiles along P, Q and K
};

/// Byte offsets of the shared regions (A, B, the tap-offset table, the patch) and the total.
struct ConvPatchSmem {
  int a, b, koff, patch, bytes;
};

CONVP_HD int conv_patch_ceil_div(int a, int b) { return (a + b - 1) / b; }

CONVP_HD ConvPatchGeom conv_patch_geom(int n, int h, int w, int c, int k, int r, int s, int stride, int pad,
                                       int dilation, int p, int q, int tp, int tq, int bn) {
  ConvPatchGeom g{};
  g.n = n; g.h = h; g.w = w; g.c = c; g.k = k; g.r = r; g.s = s;
  g.stride = stride; g.pad = pad; g.dilation = dilation; g.p = p; g.q = q;
  g.tp = tp; g.tq = tq; g.bn = bn;
  g.kg = r * s * c;
  g.kp = conv_patch_ceil_div(g.kg, 16) * 16;
  g.lda = g.kp + 8;
  g.ph = (tp - 1) * stride + (r - 1) * dilation + 1;
  g.pw = (tq - 1) * stride + (s - 1) * dilation + 1;
  g.tiles_p = conv_patch_ceil_div(p, tp);
  g.tiles_q = conv_patch_ceil_div(q, tq);
  g.tiles_k = conv_patch_ceil_div(k, bn);
  return g;
}

CONVP_HD ConvPatchSmem conv_patch_smem(const ConvPatchGeom& g) {
  ConvPatchSmem L{};
  L.a = 0;
  L.b = L.a + g.tp * g.tq * g.lda * 2;  // lda * 2 is a multiple of 16
  L.koff = L.b + g.bn * g.lda * 2;
  L.patch = L.koff + g.kp * 4;
  L.bytes = L.patch + conv_patch_ceil_div(g.ph * g.pw * g.c * 2, 16) * 16;
  return L;
}

/// The patch element of tap k (< kg) relative to its pixel's base: tap (r, s, c) of KRSC.
CONVP_HD int conv_patch_koff(const ConvPatchGeom& g, int k) {
  const int r = k / (g.s * g.c), s = (k / g.c) % g.s, c = k % g.c;
  return (r * g.dilation * g.pw + s * g.dilation) * g.c + c;
}

/// The patch element of local pixel m's first tap; tq is the tile's width (a constant in the kernel).
CONVP_HD int conv_patch_pixel_base(const ConvPatchGeom& g, int m, int tq) {
  return ((m / tq) * g.stride * g.pw + (m % tq) * g.stride) * g.c;
}

/// Pixel tile `tile` (0 .. n * tiles_p * tiles_q - 1): its image and first output row and column.
CONVP_HD void conv_patch_tile(const ConvPatchGeom& g, int tile, int& img, int& p0, int& q0) {
  q0 = (tile % g.tiles_q) * g.tq;
  p0 = (tile / g.tiles_q % g.tiles_p) * g.tp;
  img = tile / (g.tiles_q * g.tiles_p);
}

/// Where pixel tile `tile` reads its patch: element j of patch row ph is X[img, h0 + ph, w0 + j / C, j % C].
struct ConvPatchSrc {
  int img, p0, q0, h0, w0, j_lo, j_hi;  // j in [j_lo, j_hi): inside the image's width
};

CONVP_HD ConvPatchSrc conv_patch_src(const ConvPatchGeom& g, int tile) {
  ConvPatchSrc s;
  conv_patch_tile(g, tile, s.img, s.p0, s.q0);
  s.h0 = s.p0 * g.stride - g.pad;
  s.w0 = s.q0 * g.stride - g.pad;
  s.j_lo = (s.w0 < 0 ? -s.w0 : 0) * g.c;
  s.j_hi = (g.w - s.w0 < g.pw ? g.w - s.w0 : g.pw) * g.c;
  return s;
}

/// Whether patch element j of row ph lies inside the image (else it is padding: zero).
CONVP_HD bool conv_patch_inside(const ConvPatchGeom& g, const ConvPatchSrc& s, int ph, int j) {
  const int h = s.h0 + ph;
  return h >= 0 && h < g.h && j >= s.j_lo && j < s.j_hi;
}

/// Blocks along x: one per pixel tile, or, persistent, at most `ctas` in all over the filter tiles.
CONVP_HD int conv_patch_grid_x(const ConvPatchGeom& g, int ctas) {
  const int tiles = g.n * g.tiles_p * g.tiles_q;
  if (ctas <= 0) return tiles;
  const int per_k = ctas / g.tiles_k;
  return per_k < 1 ? 1 : (per_k < tiles ? per_k : tiles);
}
