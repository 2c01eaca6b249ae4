#!/usr/bin/env python3
"""PyTorch's time for each template_bench workload, on a GPU machine that has PyTorch (the lent device
machines do): a second vendor reference beside tuner's own cuBLAS/cuDNN calls, as users run them.

Reads the workload rows of `template_bench --trials 0 --out FILE` (op, shape, dtype), times each with
CUDA events (5 warm-ups, then 50 runs, each after a 256 MiB L2 flush; the median), TF32 off,
cudnn.benchmark on; conv2d is timed in both memory formats (contiguous NCHW and channels_last) and the
faster is kept. Writes JSON rows {op, shape, dtype, ms, tflops|gbps, detail}.

    python3 scripts/torch_ref.py BASELINES.json OUT.json
"""
import json
import sys

import torch
import torch.nn.functional as F


def dims(shape):
    return {k: int(v) for k, v in (kv.split("=") for kv in shape.split(","))}


DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def median_ms(fn, runs=50, warmup=5):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def rand(shape, dtype):
    return (torch.rand(shape, device="cuda", dtype=torch.float32) * 2 - 1).to(dtype)


def row(op, shape, dtype):
    d, t = dims(shape), DTYPES[dtype]
    if op == "gemm":
        a, b = rand((d["M"], d["K"]), t), rand((d["K"], d["N"]), t)
        ms = median_ms(lambda: torch.matmul(a, b))
        return ms, {"tflops": 2.0 * d["M"] * d["N"] * d["K"] / (ms * 1e-3) / 1e12}, "torch.matmul"
    if op == "batched_gemm":
        a, b = rand((d["B"], d["M"], d["K"]), t), rand((d["B"], d["K"], d["N"]), t)
        ms = median_ms(lambda: torch.bmm(a, b))
        return ms, {"tflops": 2.0 * d["B"] * d["M"] * d["N"] * d["K"] / (ms * 1e-3) / 1e12}, "torch.bmm"
    if op == "conv2d":
        x, w = rand((d["N"], d["C"], d["H"], d["W"]), t), rand((d["K"], d["C"], d["R"], d["S"]), t)
        kw = dict(stride=d.get("stride", 1), padding=d.get("pad", 0), dilation=d.get("dilation", 1))
        best = None
        for fmt in (torch.contiguous_format, torch.channels_last):
            xf, wf = x.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt)
            ms = median_ms(lambda: F.conv2d(xf, wf, **kw))
            if best is None or ms < best[0]:
                best = (ms, "channels_last" if fmt == torch.channels_last else "nchw")
        ms, fmt = best
        out = F.conv2d(x, w, **kw)
        p, q = out.shape[2], out.shape[3]
        flops = 2.0 * d["N"] * d["K"] * p * q * d["C"] * d["R"] * d["S"]
        return ms, {"tflops": flops / (ms * 1e-3) / 1e12}, "F.conv2d " + fmt
    if op in ("softmax", "layernorm"):
        rows, cols = d["rows"], d["cols"]
        x = rand((rows, cols), t)
        if op == "softmax":
            fn = lambda: torch.softmax(x, dim=-1)
        else:
            g, b = rand((cols,), t), rand((cols,), t)
            fn = lambda: F.layer_norm(x, (cols,), g, b)
        ms = median_ms(fn)
        nbytes = 2.0 * rows * cols * x.element_size()  # read once, written once
        return ms, {"gbps": nbytes / (ms * 1e-3) / 1e9}, "torch." + op
    raise ValueError(f"torch_ref: op '{op}' is not one of gemm, batched_gemm, conv2d, softmax, layernorm")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: torch_ref.py BASELINES.json OUT.json")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    rows = json.load(open(sys.argv[1]))["rows"]
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "rows": []}
    for r in rows:
        ms, rate, detail = row(r["op"], r["shape"], r["dtype"])
        out["rows"].append({"op": r["op"], "shape": r["shape"], "dtype": r["dtype"], "ms": ms, "detail": detail,
                            **rate})
        print(f"  {r['op']:12s} {r['shape']:48s} {r['dtype']:5s} {ms:9.4f} ms  {detail}", flush=True)
    json.dump(out, open(sys.argv[2], "w"), indent=1)


if __name__ == "__main__":
    main()
