"""The reduced op sets of mmcv-full: compile only the ops StreamPETR calls, on the CPU or on CUDA.

`KEPT` (`KEPT_CUDA` on CUDA) keeps its sources; `pybind.cpp` registers every other `mmcv._ext` name
as a stub raising `mmcv._ext.OpNotCompiledError` when called (`mmcv.ops` asks for every name at
import); a CUDA set also cuts `cuda/cudabind.cpp` to its ops. `--full-ops` compiles everything.
Why and what: docs/upstream-env.md#the-reduced-op-set and #the-cuda-op-set.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .errors import EnvBuildError

# op -> (the `mmcv._ext` names it registers, its sources under mmcv/ops/csrc/pytorch)
KEPT: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # mmcv.utils.collect_env (run at the start of every training run) asks for both.
    "info": (("get_compiler_version", "get_compiling_cuda_version"), ("info.cpp",)),
}
# The CUDA path adds the ops the supported configs reach there (upstream_env.op_reach): mmdet's
# FocalLoss calls sigmoid_focal_loss for CUDA tensors (every config); RepDETR3D's
# DeformableFeatureAggregationCuda calls MultiScaleDeformableAttnFunction.
KEPT_CUDA: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    **KEPT,
    "focal_loss": (
        (
            "sigmoid_focal_loss_forward",
            "sigmoid_focal_loss_backward",
            "softmax_focal_loss_forward",
            "softmax_focal_loss_backward",
        ),
        ("focal_loss.cpp", "cuda/focal_loss_cuda.cu"),
    ),
    "ms_deform_attn": (
        ("ms_deform_attn_forward", "ms_deform_attn_backward"),
        ("ms_deform_attn.cpp", "cuda/ms_deform_attn_cuda.cu"),
    ),
}
PYTORCH_SRC = Path("mmcv/ops/csrc/pytorch")
CUDABIND = "cuda/cudabind.cpp"
PYBIND = PYTORCH_SRC / "pybind.cpp"
FULL_OPS_HINT = "nox -s upstream_env -- --full-ops"
MODULE_START = "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"
STUB_HELPER = """
// streampetr-dali's reduced op set: every name below that is not compiled is registered as a stub
// that raises mmcv._ext.OpNotCompiledError (a NotImplementedError) when called.
static PyObject *streampetr_op_not_compiled = nullptr;
[[noreturn]] static void streampetr_not_compiled(const char *name) {
  PyErr_Format(streampetr_op_not_compiled,
               "mmcv op '%s' is not compiled in this mmcv-full build: it holds only the ops the "
               "%WHAT% (streampetr-dali's reduced op set). Build the full set "
               "with `%s`.", name, "%HINT%");
  throw py::error_already_set();
}

"""
EXCEPTION_SETUP = """  streampetr_op_not_compiled = PyErr_NewExceptionWithDoc(
      "mmcv._ext.OpNotCompiledError",
      "An op left out of streampetr-dali's reduced mmcv-full build was called.",
      PyExc_NotImplementedError, nullptr);
  m.attr("OpNotCompiledError") = py::handle(streampetr_op_not_compiled);
  m.attr("COMPILED_OPS") = py::make_tuple(%NAMES%);
"""
DEF_NAME = re.compile(r'm\.def\(\s*"(\w+)"')
# pybind.cpp's head when the kept ops' declarations use no torch type (the CPU set: the version
# strings): pybind11 alone, not torch/extension.h, whose parsing was 20 of the unit's 21 CPU-s
PYBIND11_ONLY = "#include <pybind11/pybind11.h>\n\n#include <string>\n\nnamespace py = pybind11;\n\n"
TORCH_TYPE = re.compile(r"\b(Tensor|at|torch|c10)\b")
# What the stub's message says the build holds (the CPU text is the one CPU wheels were keyed by).
WHAT = {False: "CPU StreamPETR stack calls", True: "StreamPETR configs reach on CUDA"}
DISPATCH_KEY = re.compile(r"DISPATCH_DEVICE_IMPL\(\s*(\w+)")
REGISTER = re.compile(r"REGISTER_DEVICE_IMPL\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)")
IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Reduction:
    """What a reduced build compiles and what it registers as stubs."""

    compiled_ops: tuple[str, ...]  # `mmcv._ext` names with their real code
    stubbed_ops: tuple[str, ...]  # names that raise OpNotCompiledError
    units: tuple[str, ...]  # the .cpp files compiled, relative to mmcv/ops/csrc/pytorch


def kept(cuda: bool = False) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    return KEPT_CUDA if cuda else KEPT


def kept_names(cuda: bool = False) -> tuple[str, ...]:
    return tuple(name for names, _ in kept(cuda).values() for name in names)


def kept_units(cuda: bool = False) -> tuple[str, ...]:
    """The units listed by the set (a CUDA set also keeps the CPU units registering its ops)."""
    extra = (CUDABIND,) if cuda else ()
    return ("pybind.cpp", *(src for _, sources in kept(cuda).values() for src in sources), *extra)


def _helper(cuda: bool) -> str:
    return STUB_HELPER.replace("%WHAT%", WHAT[cuda])


def label(cuda: bool = False) -> str:
    """A short key of the kept set, for the wheel cache folder: another set is another wheel."""
    text = repr(sorted((op, names, srcs) for op, (names, srcs) in kept(cuda).items())) + _helper(cuda)
    text += "" if cuda else PYBIND11_ONLY  # the CPU set's pybind.cpp has pybind11's head (_head)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _statements(body: str, where: str) -> list[str]:
    """The `m.def(...);` statements of a PYBIND11_MODULE body, verbatim; anything else is an error."""
    out, i = [], 0
    while True:
        while i < len(body) and body[i].isspace():
            i += 1
        if body.startswith("}", i):
            return out
        if not body.startswith("m.def(", i):
            line = body[i:].split("\n", 1)[0]
            raise EnvBuildError(f"{where}: expected `m.def(` or `}}` in the module body, found {line!r}")
        depth, j, in_str = 0, i, False
        while j < len(body):
            c = body[j]
            if in_str:
                if c == "\\":
                    j += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        end = body.find(";", j)
        if depth != 0 or end < 0 or body[j + 1 : end].strip():
            raise EnvBuildError(f"{where}: an unterminated m.def statement: {body[i : i + 80]!r}")
        out.append(body[i : end + 1])
        i = end + 1


def rewrite_pybind(
    text: str, keep: tuple[str, ...], where: str = str(PYBIND), cuda: bool = False
) -> tuple[str, tuple[str, ...]]:
    """`pybind.cpp` registering `keep` as they are and every other name as a raising stub; returns
    the new text and the stubbed names. Raises EnvBuildError naming `where` when a kept name is
    absent or the module body is not the plain list of `m.def` that mmcv-full 1.6.0 has."""
    start = text.find(MODULE_START)
    if start < 0:
        raise EnvBuildError(f"{where}: no `{MODULE_START}`; is this mmcv-full 1.6.0?")
    body_at = start + len(MODULE_START)
    statements = _statements(text[body_at:], where)
    names = [m.group(1) if (m := DEF_NAME.match(s)) else None for s in statements]
    if None in names:
        bad = statements[names.index(None)][:80]
        raise EnvBuildError(f"{where}: an m.def without a literal name: {bad!r}")
    missing = sorted(set(keep) - set(names))
    if missing:
        raise EnvBuildError(f"{where}: the reduced op set keeps {', '.join(missing)}; it registers none such")
    stubbed: list[str] = []
    lines = [EXCEPTION_SETUP.replace("%NAMES%", ", ".join(f'"{n}"' for n in keep))]
    for name, statement in zip(names, statements, strict=True):
        if name in keep:
            lines.append(f"  {statement}\n")
        elif name not in stubbed:  # knn_forward is registered twice: one stub
            stubbed.append(name)
            lines.append(
                f'  m.def("{name}", [](py::args, py::kwargs) -> py::object {{ '
                f'streampetr_not_compiled("{name}"); }}, "not compiled (reduced op set)");\n'
            )
    helper = _helper(cuda).replace("%HINT%", FULL_OPS_HINT)
    new = _head(text[:start], keep) + helper + MODULE_START + "\n" + "".join(lines) + "}\n"
    return new, tuple(stubbed)


def _head(head: str, keep: tuple[str, ...]) -> str:
    """What stands before the module: as it is, or, where the kept names' declarations use no torch
    type, pybind11's header and those declarations alone (the stubs need nothing else)."""
    codes = [
        "".join(ln for ln in _code(item).splitlines(True) if not ln.lstrip().startswith("#"))
        for item in _items(head)
    ]
    kept = [code.strip() for code in codes if "(" in code and _declared_name(code) in keep]
    if any(TORCH_TYPE.search(code) for code in kept):
        return head
    return PYBIND11_ONLY + "".join(f"{code}\n" for code in kept) + "\n"


def _items(text: str) -> list[str]:
    """The top-level items of a C++ file, verbatim: preprocessor lines, declarations and statements
    up to `;`, definitions up to their closing brace (and a `;` after it). Comments and string
    literals are skipped over; their text stays in the item."""
    items, start, i, depth = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        if text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        if c in "\"'":
            j = i + 1
            while text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "#" and depth == 0 and not text[start:i].strip():
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            items.append(text[start:i])
            start = i
            continue
        if c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
            macro = (
                c == ")" and depth == 0 and _code(text[start:i]).strip().startswith("REGISTER_DEVICE_IMPL")
            )
            if (c == "}" or macro) and depth == 0:  # mmcv leaves the `;` off two registrations
                after = i + 1
                while after < len(text) and text[after] in " \t":
                    after += 1
                i = after + 1 if text.startswith(";", after) else i + 1
                items.append(text[start:i])
                start = i
                continue
        elif c == ";" and depth == 0:
            items.append(text[start : i + 1])
            start = i + 1
        i += 1
    if text[start:].strip():
        items.append(text[start:])
    return items


def _code(item: str) -> str:
    """An item without its comments (and string contents), for name lookups."""
    item = re.sub(r"/\*.*?\*/", " ", item, flags=re.S)
    item = re.sub(r"//[^\n]*", " ", item)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', item)


def _declared_name(code: str) -> str | None:
    """The name a function declaration or definition introduces: the identifier before its `(`."""
    head = code.split("(", 1)[0] if "(" in code else ""
    names = IDENT.findall(head)
    return names[-1] if names else None


def cut_cudabind(text: str, impl_keys: set[str], where: str = CUDABIND) -> tuple[str, tuple[str, ...]]:
    """`cuda/cudabind.cpp` with only what the ops of `impl_keys` (their `*_impl` dispatch keys) need:
    their `REGISTER_DEVICE_IMPL(key, CUDA, fn)` lines, the definitions those `fn` reach and the
    declarations they use. Returns the new text and the functions it leaves to the `.cu` files
    (declared, used, not defined here). Raises EnvBuildError naming `where` when a key has no CUDA
    registration."""
    items = _items(text)
    codes = [_code(item) for item in items]
    defined = {n: i for i, c in enumerate(codes) if "{" in c and (n := _declared_name(c))}
    declared = {_declared_name(c) for c in codes if "{" not in c and "(" in c and not REGISTER.search(c)}
    registered = {m.group(1): m.group(3) for c in codes if (m := REGISTER.search(c)) and m.group(2) == "CUDA"}
    missing = sorted(impl_keys - set(registered))
    if missing:
        raise EnvBuildError(f"{where}: no CUDA registration of {', '.join(missing)}; not mmcv-full 1.6.0?")
    needed = {registered[k] for k in impl_keys}
    todo = [n for n in needed if n in defined]
    while todo:
        for name in IDENT.findall(codes[defined[todo.pop()]].split("{", 1)[1]):
            if (name in defined or name in declared) and name not in needed:
                needed.add(name)
                if name in defined:
                    todo.append(name)
    out = []
    for item, code in zip(items, codes, strict=True):
        stripped = code.strip()
        if not stripped or stripped.startswith("#"):
            out.append(item)
        elif m := REGISTER.search(code):
            if m.group(1) in impl_keys and m.group(2) == "CUDA":
                out.append(item)
        elif "(" in code and _declared_name(code) not in needed | impl_keys:
            continue  # another op's declaration or definition
        else:
            out.append(item)
    return "".join(out) + "\n", tuple(sorted(needed - set(defined)))


def _impl_keys(root: Path, units: Iterable[str]) -> set[str]:
    return {k for u in units if u.endswith(".cpp") for k in DISPATCH_KEY.findall((root / u).read_text())}


def reduce_sources(src: Path, cuda: bool = False) -> Reduction:
    """Turn an unpacked mmcv-full sdist at `src` into the reduced build: rewrite pybind.cpp and
    delete the sources of the ops left out (setup.py compiles whatever .cpp/.cu it finds). A CUDA
    set also cuts cuda/cudabind.cpp to its ops and keeps the CPU units that register them."""
    root = src / PYTORCH_SRC
    units = kept_units(cuda)
    absent = [u for u in units if not (root / u).is_file()]
    if absent:
        raise EnvBuildError(f"{root}: the reduced op set's sources {', '.join(absent)} are missing")
    pybind = src / PYBIND
    text, stubbed = rewrite_pybind(pybind.read_text(), kept_names(cuda), str(pybind), cuda)
    pybind.write_text(text)
    if cuda:
        keys = _impl_keys(root, units)
        cpu = [
            str(p.relative_to(root))
            for p in sorted(root.glob("cpu/*.cpp"))
            if any(m.group(1) in keys and m.group(2) == "CPU" for m in REGISTER.finditer(p.read_text()))
        ]
        units = (*units, *cpu)
        bind = root / CUDABIND
        cut, external = cut_cudabind(bind.read_text(), keys, str(bind))
        bind.write_text(cut)
        kernels = "".join((root / u).read_text() for u in units if u.endswith(".cu"))
        undefined = [f for f in external if not re.search(rf"\b{f}\s*\(", kernels)]
        if undefined:
            raise EnvBuildError(
                f"{bind}: the kept ops need {', '.join(undefined)}; no kept .cu file defines it"
            )
    globs = ("*.cpp", "cpu/*.cpp", *(("cuda/*.cu", "cuda/*.cpp") if cuda else ()))  # a CPU build skips cuda/
    for path in [p for g in globs for p in root.glob(g)]:
        if str(path.relative_to(root)) not in units:
            path.unlink()
    return Reduction(compiled_ops=kept_names(cuda), stubbed_ops=stubbed, units=units)
