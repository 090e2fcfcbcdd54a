#!/usr/bin/env python3
"""Runs the tilejit kernel of tilejit_torch_sample on PyTorch tensors and checks it against torch.

Exit code 0: every check passed; 1: a mismatch; 77: skipped (no torch, no GPU or the module is not built),
with a line saying why."""
import sys


def skip(why):
    print(f"SKIP sample_torch_dlpack: {why}")
    sys.exit(77)


try:
    import torch
except ImportError:
    skip("PyTorch is not installed for " + sys.executable)
if not torch.cuda.is_available():
    skip("no CUDA GPU visible to PyTorch")
try:
    import tilejit_torch_sample as tj
except ImportError as e:
    skip(f"the extension module is not built for this Python ({e}); see samples/python/CMakeLists.txt")


def reference(x, alpha):
    return (x.float() * alpha).to(torch.bfloat16)


def check(name, got, want):
    bad = (got.view(torch.int16) != want.view(torch.int16)).sum().item()
    print(f"{'PASS' if bad == 0 else 'FAIL'} {name}: {got.numel()} elements, {bad} differ bit-wise")
    return bad == 0


def refused(name, launch, parts):
    """Whether `launch` raises RuntimeError with every one of `parts` in its message."""
    try:
        launch()
    except RuntimeError as e:
        good = all(p in str(e) for p in parts)
        print(f"{'PASS' if good else 'FAIL'} {name} refused: {str(e).splitlines()[0]}")
        return good
    print(f"FAIL {name}: no error")
    return False


def main():
    torch.manual_seed(0)
    ok = True
    # Contiguous tensors on the current (default) stream, with edge tiles in both dimensions.
    x = torch.randn(1000, 776, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    tj.scale(x, y, 1.5, torch.cuda.current_stream().cuda_stream)
    ok &= check("contiguous 1000 x 776, default stream", y, reference(x, 1.5))

    # A column slice of a wider tensor (strides from DLPack, 16-byte aligned start), written into a slice,
    # on a side stream: the kernel runs after the producer's work on that stream and before the check.
    wide = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
    out = torch.zeros(512, 1024, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        src = wide * 1  # produced on the side stream
        tj.scale(src[:, 256:768], out[:, 128:640], -0.25, torch.cuda.current_stream().cuda_stream)
    torch.cuda.current_stream().wait_stream(side)
    ok &= check("strided slices, side stream", out[:, 128:640], reference(wide[:, 256:768], -0.25))
    ok &= check("columns outside the slice untouched", out[:, :128], torch.zeros_like(out[:, :128]))

    # A slice whose start is not 16-byte aligned cannot be a TMA tensor: tilejit says which rule and value.
    stream = torch.cuda.current_stream().cuda_stream
    ok &= refused("misaligned slice", lambda: tj.scale(wide[:, 1:513], y[:512, :512], 1.0, stream),
                  ("DLPack tensor 'x'", "16-byte aligned"))
    ok &= refused("float32 tensor", lambda: tj.scale(x.float(), y, 1.0, stream), ("dtype", "kDLBfloat (4), 16 bits"))

    torch.cuda.synchronize()
    print(f"{'PASS' if ok else 'FAIL'} sample_torch_dlpack on {torch.cuda.get_device_name()} (torch {torch.__version__})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
