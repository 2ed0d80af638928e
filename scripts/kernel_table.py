#!/usr/bin/env python3
"""Where the GPU time of a profiled window goes, for two Kineto traces side by side.

  kernel_table.py A.pt.trace.json.gz B.pt.trace.json.gz [--labels bf16 fp16] [--steps 5] [--top 12]

Each GPU kernel, copy and memset is charged to the innermost PyTorch op that launched it (the
cpu_op enclosing its launch on the launching thread), and ops are grouped into what decides a
CNN's speed: convolution, BatchNorm, casts and copies, other elementwise ops, GEMMs, the optimizer,
communication. Prints milliseconds per step for each trace, their ratio, and the ops and kernels
that cost most. Written for issue 18's bf16-against-fp16 question; works for any two runs.
"""
import argparse
import bisect
import collections
import gzip
import json
import re

CATEGORIES = [  # first match wins, on the op name, then on the kernel name
    ("convolution", r"convolution|conv2d|cudnn_conv|conv_depthwise|fprop|dgrad|wgrad|implicit_gemm|xmma_conv"),
    ("batchnorm", r"batch_norm|batchnorm|\bbn_|cudnn::bn|welford"),
    ("casts and copies", r"aten::to\b|aten::_to_copy|aten::copy_|aten::contiguous|direct_copy|copy_kernel|Memcpy|Memset"),
    ("optimizer", r"optimizer|fused_sgd|fused_adam|multi_tensor|_foreach|amp_update_scale|unscale"),
    ("communication", r"nccl|c10d|all_reduce|allreduce|reduce_scatter|all_gather"),
    ("gemm", r"aten::mm\b|aten::addmm|aten::bmm|aten::linear|aten::matmul|gemm|cutlass|cublas"),
    ("attention", r"attention|flash|softmax"),
    ("pooling", r"pool"),
    ("loss", r"cross_entropy|log_softmax|nll_loss"),
    ("elementwise", r"relu|add|mul|div|sub|elementwise|threshold|gelu|fill|zero_|clamp"),
]
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def category_of(op, kernel):
    for name, pattern in CATEGORIES:
        if re.search(pattern, op, re.IGNORECASE):
            return name
    for name, pattern in CATEGORIES:
        if re.search(pattern, kernel, re.IGNORECASE):
            return name
    return "other"


def innermost_ops(events):
    """For each thread, a lookup from a timestamp to the innermost cpu_op enclosing it."""
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op" and "dur" in e:
            by_thread[(e.get("pid"), e.get("tid"))].append((e["ts"], e["ts"] + e["dur"], e["name"]))
    lookups = {}
    for thread, ops in by_thread.items():
        ops.sort(key=lambda o: (o[0], -o[1]))
        starts = [o[0] for o in ops]

        def find(ts, ops=ops, starts=starts):
            # The enclosing op that started last is the innermost (ops nest on one thread).
            i = bisect.bisect_right(starts, ts) - 1
            while i >= 0:
                start, end, name = ops[i]
                if start <= ts <= end:
                    return name
                i -= 1
            return "(no op)"
        lookups[thread] = find
    return lookups


def summarize(path):
    trace = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    events = trace["traceEvents"]
    lookups = innermost_ops(events)
    launches = {}  # correlation id -> (thread, ts) of the runtime call that launched the GPU work
    for e in events:
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {}):
            launches[e["args"]["correlation"]] = ((e.get("pid"), e.get("tid")), e["ts"])
    by_category, by_op, by_kernel = collections.Counter(), collections.Counter(), collections.Counter()
    total = 0.0
    for e in events:
        if e.get("cat") not in GPU_CATEGORIES or "dur" not in e:
            continue
        launch = launches.get(e.get("args", {}).get("correlation"))
        op = lookups[launch[0]](launch[1]) if launch and launch[0] in lookups else "(no op)"
        kernel = e["name"]
        by_category[category_of(op, kernel)] += e["dur"]
        by_op[op] += e["dur"]
        by_kernel[kernel[:90]] += e["dur"]
        total += e["dur"]
    return total, by_category, by_op, by_kernel


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs=2)
    parser.add_argument("--labels", nargs=2, default=["A", "B"])
    parser.add_argument("--steps", type=int, default=5, help="steps in each profiled window")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    (ta, ca, oa, ka), (tb, cb, ob, kb) = (summarize(p) for p in args.traces)
    ms = lambda us: us / 1e3 / args.steps
    a, b = args.labels
    print(f"  GPU time per step by category (ms): {a} {ms(ta):.1f}, {b} {ms(tb):.1f} (ratio {ta / tb if tb else float('nan'):.2f})")
    print(f"    {'category':<18}{a:>10}{b:>10}{'ratio':>8}")
    for name in sorted(set(ca) | set(cb), key=lambda n: -(ca[n] + cb[n])):
        ratio = f"{ca[name] / cb[name]:.2f}" if cb[name] else "-"
        print(f"    {name:<18}{ms(ca[name]):>10.2f}{ms(cb[name]):>10.2f}{ratio:>8}")
    for title, counter_a, counter_b in (("ops", oa, ob), ("kernels", ka, kb)):
        print(f"  the {args.top} {title} costing most in {a}, beside {b} (ms per step)")
        for name, us in counter_a.most_common(args.top):
            print(f"    {ms(us):8.2f} {ms(counter_b.get(name, 0)):8.2f}  {name}")


if __name__ == "__main__":
    main()
