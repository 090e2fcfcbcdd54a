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
        src = wide[:, 256:768] * 1  # produced on the side stream
        tj.scale(src, out[:, 128:640], -0.25, torch.cuda.current_stream().cuda_stream)
    torch.cuda.current_stream().wait_stream(side)
    ok &= check("strided slices, side stream", out[:, 128:640], reference(wide[:, 256:768], -0.25))
    ok &= check("columns outside the slice untouched", out[:, :128], torch.zeros_like(out[:, :128]))

    # A slice whose start is not 16-byte aligned cannot be a TMA tensor: tilejit says which rule and value.
    try:
        tj.scale(wide[:, 1:513], y[:512, :512], 1.0, torch.cuda.current_stream().cuda_stream)
        print("FAIL misaligned slice: no error")
        ok = False
    except RuntimeError as e:
        good = "DLPack tensor 'x'" in str(e) and "16-byte aligned" in str(e)
        print(f"{'PASS' if good else 'FAIL'} misaligned slice refused: {str(e).splitlines()[0]}")
        ok &= good
    # A float32 tensor where bf16 is needed.
    try:
        tj.scale(x.float(), y, 1.0, torch.cuda.current_stream().cuda_stream)
        print("FAIL float32 tensor: no error")
        ok = False
    except RuntimeError as e:
        good = "dtype" in str(e) and "kDLBfloat (4), 16 bits" in str(e)
        print(f"{'PASS' if good else 'FAIL'} float32 tensor refused: {str(e).splitlines()[0]}")
        ok &= good

    torch.cuda.synchronize()
    print(f"{'PASS' if ok else 'FAIL'} sample_torch_dlpack on {torch.cuda.get_device_name()} (torch {torch.__version__})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
