#!/usr/bin/env python3
"""Where this Python's PyTorch keeps what a libtorch C++ build and run need, printed
as shell assignments (eval "$(python3 tests/bench/torch_paths.py)"):

  TORCH_DIR            the torch package folder
  TORCH_CMAKE_PREFIX   torch.utils.cmake_prefix_path (holds Torch/TorchConfig.cmake),
                       or, where this torch has none (Debian's python3-torch), the
                       system libtorch's prefix; empty if neither exists
  TORCH_LD_PATH        torch/lib and every lib folder of the pip NVIDIA packages
                       (nvidia/*/lib, nvidia/cu13/lib, ...): what a C++ program linked
                       against this libtorch needs on LD_LIBRARY_PATH to load the same
                       cuDNN, cuBLAS, NCCL, ... as Python's torch does
  TORCH_NCCL_INCLUDE   the folder holding nccl.h from the pip NCCL package, or empty

torch is located without being imported (fast; no CUDA initialisation).
With --versions, imports torch and prints one JSON object instead: torch, CUDA,
cuDNN, NCCL, torchvision, and the GPU's name and compute capability where there is one.
"""
import glob
import importlib.util
import json
import os
import shlex
import sys


def torch_dir():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return ""
    return list(spec.submodule_search_locations)[0]


def paths():
    tdir = torch_dir()
    out = {"TORCH_DIR": tdir, "TORCH_CMAKE_PREFIX": "", "TORCH_LD_PATH": "", "TORCH_NCCL_INCLUDE": ""}
    candidates = []
    if tdir:
        candidates.append(os.path.join(tdir, "share", "cmake"))
    candidates += ["/usr/lib/x86_64-linux-gnu/cmake", "/usr/lib/aarch64-linux-gnu/cmake"]
    for prefix in candidates:
        if os.path.isfile(os.path.join(prefix, "Torch", "TorchConfig.cmake")):
            out["TORCH_CMAKE_PREFIX"] = prefix
            break
    if not tdir:
        return out
    ld = []
    if os.path.isdir(os.path.join(tdir, "lib")):
        ld.append(os.path.join(tdir, "lib"))
    site = os.path.dirname(tdir)
    nvidia = os.path.join(site, "nvidia")
    libs = set()
    for pattern in ("*/lib", "*/*/lib", "*/lib64", "*/*/lib64"):
        for d in glob.glob(os.path.join(nvidia, pattern)):
            if os.path.isdir(d) and glob.glob(os.path.join(d, "*.so*")):
                libs.add(d)
    ld += sorted(libs)
    out["TORCH_LD_PATH"] = ":".join(ld)
    for pattern in ("nccl/include/nccl.h", "*/include/nccl.h", "*/*/include/nccl.h"):
        hits = sorted(glob.glob(os.path.join(nvidia, pattern)))
        if hits:
            out["TORCH_NCCL_INCLUDE"] = os.path.dirname(hits[0])
            break
    return out


def versions():
    import torch

    v = {"python": sys.version.split()[0], "torch": torch.__version__,
         "torch_cuda": torch.version.cuda, "cudnn": None, "nccl": None,
         "torchvision": None, "gpu": None, "capability": None, "gpu_memory_bytes": None}
    try:
        import torchvision
        v["torchvision"] = torchvision.__version__
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        v["torchvision"] = "unavailable: %s" % e
    try:
        v["cudnn"] = torch.backends.cudnn.version()
    except Exception:  # noqa: BLE001
        pass
    if torch.cuda.is_available():
        try:
            n = torch.cuda.nccl.version()
            v["nccl"] = ".".join(str(x) for x in n) if isinstance(n, tuple) else str(n)
        except Exception as e:  # noqa: BLE001
            v["nccl"] = "unavailable: %s" % e
        p = torch.cuda.get_device_properties(0)
        v["gpu"] = p.name
        v["capability"] = "%d.%d" % (p.major, p.minor)
        v["gpu_memory_bytes"] = p.total_memory
        v["gpu_count"] = torch.cuda.device_count()
    v["cuda_available"] = torch.cuda.is_available()
    return v


def main():
    if "--versions" in sys.argv[1:]:
        print(json.dumps(versions()))
        return
    for k, val in paths().items():
        print("%s=%s" % (k, shlex.quote(val)))


if __name__ == "__main__":
    main()
