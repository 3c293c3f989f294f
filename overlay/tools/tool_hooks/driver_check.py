"""Before training or evaluating: can torch (and DALI) use the GPU this host has? (stdlib only)

:func:`require_usable_cuda` refuses, by name with the numbers and the fix, a GPU that torch or DALI
cannot use (driver too old, CPU build of torch, libcuda not loading) and, where torch sees a GPU, an
env whose mmcv lacks a CUDA op a GPU run reaches (:data:`CUDA_OPS`): docs/training.md#which-drivers-work.
``CUDA_VISIBLE_DEVICES=`` (empty) hides the GPUs on purpose. ``python tools/driver_check.py [--dali]``
prints the verdict (exit 1 on a refusal).
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

# The oldest Linux driver each CUDA major runs on (minor version compatibility); the 12 and 11 rows
# are those majors' x.0 GA drivers, the 13 row the CUDA 13.0 GA driver.
MIN_DRIVER = {13: (580, 65, 6), 12: (525, 60, 13), 11: (450, 80, 2)}
CUDA_SUCCESS, CUDA_ERROR_NO_DEVICE = 0, 100
CU_ERRORS = {  # cuInit's failures that name a cause (cuda.h)
    3: "CUDA_ERROR_NOT_INITIALIZED", 35: "CUDA_ERROR_INSUFFICIENT_DRIVER", 100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE", 303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
    304: "CUDA_ERROR_OPERATING_SYSTEM", 804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
    999: "CUDA_ERROR_UNKNOWN",
}  # fmt: skip
DALI_DISTS = {"nvidia-dali-cuda110": 11, "nvidia-dali-cuda120": 12, "nvidia-dali-cuda130": 13}
TORCH_INDEX = {12: "https://download.pytorch.org/whl/cu126", 11: "https://download.pytorch.org/whl/cu118"}
PROC_VERSION = "/proc/driver/nvidia/version"
HIDE = "to run on the CPU on purpose, hide the GPUs: CUDA_VISIBLE_DEVICES= (empty)"
# The `mmcv._ext` names a GPU run of the supported configs reaches, by op and by who calls it: the
# CUDA op set the env builder compiles (`upstream_env.op_set.KEPT_CUDA` holds these and `info`;
# tests/tool_hooks/test_driver_check_ops.py keeps the two equal).
CUDA_OPS = {
    "focal_loss": (
        ("sigmoid_focal_loss_forward", "sigmoid_focal_loss_backward", "softmax_focal_loss_forward",
         "softmax_focal_loss_backward"),
        "mmdet's FocalLoss on CUDA tensors (every config)",
    ),
    "ms_deform_attn": (
        ("ms_deform_attn_forward", "ms_deform_attn_backward"),
        "RepDETR3D's DeformableFeatureAggregationCuda",
    ),
}  # fmt: skip
CUDA_OPS_FIX = "nox -s upstream_env -- --cuda"


class CudaMismatchError(RuntimeError):
    """A GPU and a driver are there, but torch or DALI cannot use them; the message says why and the fix."""


@dataclass(frozen=True)
class Driver:
    """What the NVIDIA driver of this host says (every field None where no source answered)."""

    version: str | None = None  # "580.159.03": /proc/driver/nvidia/version or nvidia-smi
    cuda: tuple[int, int] | None = None  # the newest CUDA it runs: cuDriverGetVersion, or nvidia-smi
    devices: int | None = None  # GPUs cuInit/cuDeviceGetCount sees (None: libcuda not loadable)
    libcuda_error: str | None = None  # why libcuda.so.1 did not load, or cuInit's failure by name

    @property
    def present(self) -> bool:
        """Any sign of an NVIDIA driver: a kernel module's version, libcuda, nvidia-smi."""
        return self.version is not None or self.cuda is not None or self.devices is not None

    def describe(self) -> str:
        cuda = f"CUDA {self.cuda[0]}.{self.cuda[1]}" if self.cuda else None
        if self.version is None:
            return f"a driver for {cuda}" if cuda else "a driver of unknown version"
        return f"driver {self.version}" + (f" ({cuda})" if cuda else "")


@dataclass(frozen=True)
class Runtime:
    """What wants the GPU: torch (its version, CUDA build, whether it sees a GPU) and DALI's build."""

    torch: str
    torch_cuda: str | None  # torch.version.cuda: "13.0", None for a CPU build
    torch_sees_gpu: bool
    dali: tuple[str, str, int] | None = None  # (distribution, version, CUDA major), when DALI is used


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def parse_proc_version(text: str) -> str | None:
    """The driver version in ``/proc/driver/nvidia/version`` (proprietary or open kernel module)."""
    match = re.search(r"NVRM version:.*?\s(\d{3,}\.\d+(?:\.\d+)?)\s", text)
    return match.group(1) if match else None


def parse_nvidia_smi(text: str) -> tuple[str | None, tuple[int, int] | None]:
    """(driver version, CUDA version) from the header of ``nvidia-smi``'s default output."""
    version = re.search(r"Driver Version:\s*(\d+\.\d+(?:\.\d+)?)", text)
    cuda = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", text)
    return (version.group(1) if version else None, (int(cuda[1]), int(cuda[2])) if cuda else None)


def supports(driver: Driver, major: int) -> bool | None:
    """Whether the driver runs builds for CUDA ``major`` (None: it could not be told)."""
    if driver.cuda is not None:
        return driver.cuda[0] >= major
    if driver.version is not None and major in MIN_DRIVER:
        return version_tuple(driver.version) >= MIN_DRIVER[major]
    return None


def gpus_hidden(environ: dict[str, str]) -> bool:
    """``CUDA_VISIBLE_DEVICES`` set to nothing (or starting with -1): no GPU is visible, on purpose."""
    value = environ.get("CUDA_VISIBLE_DEVICES")
    return value is not None and (value.strip() == "" or value.split(",")[0].strip() == "-1")


def _min_driver(major: int) -> str:
    return ".".join(f"{p:02d}" if i else str(p) for i, p in enumerate(MIN_DRIVER.get(major, (0,))))


def _torch_fix(runtime: Runtime, driver: Driver) -> str:
    """Two ways out of a torch the driver is too old for: a newer driver, or torch of another CUDA build."""
    major = int(runtime.torch_cuda.split(".")[0])
    fix = f"update the NVIDIA driver to >= {_min_driver(major)} (CUDA {major}.x)"
    older = driver.cuda[0] if driver.cuda else None
    if older in TORCH_INDEX:
        fix += (
            f", or install a torch built for CUDA {older} in the env: "
            f"pip install torch=={runtime.torch.split('+')[0]} torchvision --index-url {TORCH_INDEX[older]} "
            "(PyTorch's install selector lists the CUDA builds of each release), then rebuild mmcv-full's "
            "ops on it: python -m upstream_env build --torch-from <that python> --cuda"
        )
    return fix


def decide(driver: Driver, runtime: Runtime, hidden: bool = False) -> str:
    """The verdict (one line) for a host whose driver and runtimes are these; raise
    :class:`CudaMismatchError` where a GPU is there that torch or DALI cannot use."""
    if runtime.torch_sees_gpu:
        dali = runtime.dali
        if dali and supports(driver, dali[2]) is False:
            name, version, major = dali
            raise CudaMismatchError(
                f"{name} {version} needs an NVIDIA driver >= {_min_driver(major)} (CUDA {major}), this "
                f"host has {driver.describe()}; torch {runtime.torch} runs on it, DALI would not. Fix: "
                f"update the driver, or install the DALI build of the driver's CUDA major "
                f"(nvidia-dali-cuda{driver.cuda[0] if driver.cuda else 'XY'}0=={version})"
            )
        extra = f", {dali[0]} {dali[1]}" if dali else ""
        return f"GPU: {driver.describe()}, torch {runtime.torch} (CUDA {runtime.torch_cuda}){extra}"
    if hidden:
        return "CPU: the GPUs are hidden on purpose (CUDA_VISIBLE_DEVICES is empty)"
    if not driver.present or driver.devices == 0:
        why = "the driver sees no GPU" if driver.devices == 0 else "no NVIDIA driver"
        return f"CPU: no NVIDIA GPU on this host ({why})"
    where = f"this host has an NVIDIA GPU and {driver.describe()}"
    if driver.devices is None or driver.libcuda_error:
        raise CudaMismatchError(
            f"{where}, but the driver's CUDA library does not work: {driver.libcuda_error}. In a container, "
            "start it with the NVIDIA container toolkit (docker run --gpus all ...); on the host, reinstall "
            f"the driver so that libcuda.so.1 matches the kernel module; {HIDE}"
        )
    if runtime.torch_cuda is None:
        raise CudaMismatchError(
            f"{where}, but torch {runtime.torch} is a CPU-only build. Fix: install a CUDA build of torch "
            f"(the OpenMMLab env's PyPI torch is one: nox -s upstream_env -- --force); {HIDE}"
        )
    major = int(runtime.torch_cuda.split(".")[0])
    if supports(driver, major) is False:
        raise CudaMismatchError(
            f"{where}; torch {runtime.torch} is built for CUDA {runtime.torch_cuda} and needs a driver >= "
            f"{_min_driver(major)}, so it sees no GPU and would train on the CPU. Fix: "
            f"{_torch_fix(runtime, driver)}; {HIDE}"
        )
    raise CudaMismatchError(
        f"{where}, which runs torch's CUDA {runtime.torch_cuda}, yet torch {runtime.torch} sees no GPU "
        "(torch.cuda.is_available() is False: see torch's warning above, and the device files "
        f"/dev/nvidia*); {HIDE}"
    )


def probe_libcuda() -> tuple[tuple[int, int] | None, int | None, str | None]:
    """(CUDA version the driver runs, GPU count, error) from libcuda.so.1; (None, None, why) where
    it does not load."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return None, None, f"libcuda.so.1 does not load ({exc})"
    value = ctypes.c_int(0)
    cuda = None
    if lib.cuDriverGetVersion(ctypes.byref(value)) == CUDA_SUCCESS and value.value > 0:
        cuda = (value.value // 1000, value.value % 1000 // 10)
    rc = lib.cuInit(0)
    if rc == CUDA_ERROR_NO_DEVICE:
        return cuda, 0, None
    if rc != CUDA_SUCCESS:
        return cuda, 1, f"cuInit failed with {CU_ERRORS.get(rc, 'CUDA error')} ({rc})"
    count = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(count))
    return cuda, count.value, None


def probe_driver() -> Driver:
    """This host's driver: libcuda.so.1 first, then the kernel module's version, then nvidia-smi."""
    cuda, devices, error = probe_libcuda()
    version = None
    try:
        with open(PROC_VERSION, encoding="utf-8", errors="replace") as fh:
            version = parse_proc_version(fh.read())
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi and (version is None or cuda is None):
        try:
            out = subprocess.run([smi], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        smi_version, smi_cuda = parse_nvidia_smi(out)
        version, cuda = version or smi_version, cuda or smi_cuda
    if devices is None and version is None and cuda is None:
        error = None  # no driver at all: nothing failed
    return Driver(version=version, cuda=cuda, devices=devices, libcuda_error=error)


def installed_dali() -> tuple[str, str, int] | None:
    """(distribution, version, CUDA major) of the installed DALI build, or None."""
    for name, major in DALI_DISTS.items():
        try:
            return name, importlib.metadata.version(name), major
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def probe_runtime(uses_dali: bool) -> Runtime:
    import torch  # the caller's torch (tools/train.py has it imported already)

    dali = installed_dali() if uses_dali else None
    return Runtime(torch.__version__, torch.version.cuda, torch.cuda.is_available(), dali)


@dataclass(frozen=True)
class MmcvOps:
    """What the env's compiled mmcv ops are: its CUDA release (None: CPU ops only), the names it
    compiled (None: every op, a full build) and where the library lies."""

    version: str
    cuda: str | None
    compiled: tuple[str, ...] | None
    library: str


def probe_mmcv_ops() -> MmcvOps | None:
    """The env's mmcv ops (None where no mmcv-full is installed: nothing to check). A reduced build
    (streampetr-dali's op set) says what it compiled in ``mmcv._ext.COMPILED_OPS``."""
    try:
        import mmcv
    except ImportError:
        return None
    try:
        import mmcv._ext as ext
    except ImportError as exc:
        return MmcvOps(mmcv.__version__, None, (), f"no mmcv._ext ({exc})")
    cuda = ext.get_compiling_cuda_version()
    compiled = getattr(ext, "COMPILED_OPS", None)
    return MmcvOps(
        mmcv.__version__,
        None if cuda in (None, "", "not available") else str(cuda),
        None if compiled is None else tuple(compiled),
        str(ext.__file__),
    )


def missing_cuda_ops(ops: MmcvOps) -> list[tuple[str, str]]:
    """(name, who calls it) of each :data:`CUDA_OPS` name the env's mmcv cannot run on a GPU."""
    wanted = [(name, who) for names, who in CUDA_OPS.values() for name in names]
    if ops.cuda is None:
        return wanted
    return [(name, who) for name, who in wanted if ops.compiled is not None and name not in ops.compiled]


def require_cuda_ops(ops: MmcvOps | None) -> None:
    """Raise :class:`CudaMismatchError` naming the first missing op, the env's mmcv build and the fix
    where the env's mmcv lacks a CUDA op a GPU run reaches."""
    missing = [] if ops is None else missing_cuda_ops(ops)
    if not missing:
        return
    name, who = missing[0]
    build = f"CUDA {ops.cuda} ops" if ops.cuda else "CPU ops only (get_compiling_cuda_version: not available)"
    if ops.compiled is not None:
        build += f", compiled: {', '.join(ops.compiled) or 'none'}"
    more = (
        f" and {len(missing) - 1} more ({', '.join(n for n, _ in missing[1:])})" if len(missing) > 1 else ""
    )
    raise CudaMismatchError(
        f"torch sees a GPU, but the env's mmcv-full {ops.version} has no CUDA op {name!r} ({who}){more}: "
        f"it is built with {build} ({ops.library}). Fix: rebuild the env with mmcv's CUDA ops: "
        f"{CUDA_OPS_FIX}; {HIDE}"
    )


def require_usable_cuda(uses_dali: bool = False, quiet: bool = False) -> str:
    """The verdict for this host; ``SystemExit`` naming the mismatch and its fix where torch or DALI
    cannot use the GPU that is there, or the env's mmcv lacks a CUDA op a GPU run reaches (a message,
    not a traceback: the cause is the host or the env)."""
    runtime = probe_runtime(uses_dali)
    hidden = gpus_hidden(dict(os.environ))
    driver = Driver() if hidden and not runtime.torch_sees_gpu else probe_driver()
    try:
        verdict = decide(driver, runtime, hidden)
        if runtime.torch_sees_gpu:
            require_cuda_ops(probe_mmcv_ops())
    except CudaMismatchError as exc:
        raise SystemExit(f"driver_check: refusing to run: {exc}") from None
    if not quiet:
        print(f"driver_check: {verdict}", file=sys.stderr, flush=True)
    return verdict


if __name__ == "__main__":
    require_usable_cuda(uses_dali="--dali" in sys.argv[1:])
