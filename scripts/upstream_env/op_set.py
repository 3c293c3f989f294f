"""The reduced CPU op set of mmcv-full: compile only the ops the CPU StreamPETR stack calls.

mmcv-full 1.6.0's setup.py compiles every `.cpp` under `mmcv/ops/csrc/pytorch{,/cpu}` (67 units on
the CPU path, ~95% of a cold env build) and `pybind.cpp` registers all 100 functions of `mmcv._ext`.
`mmcv.ops` imports nearly every op module, and each one asks `ext_loader.load_ext` for its names,
which raises when one is missing, so every name must stay registered. The reduced build keeps the
sources of `KEPT` and registers every other name as a stub that raises `mmcv._ext.OpNotCompiledError`
(a `NotImplementedError`) naming the op and how to build the full set, only when it is called.

`KEPT` is what training (streaming, PETRv1, 8-key), evaluation, `create_data` and the stack tests
were traced calling in `mmcv._ext` (docs/upstream-env.md#the-reduced-op-set); a CUDA-ops build and
`--full-ops` always compile everything.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from . import EnvBuildError

# op -> (the `mmcv._ext` names it registers, its sources under mmcv/ops/csrc/pytorch)
KEPT: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # mmcv.utils.collect_env (run at the start of every training run) asks for both.
    "info": (("get_compiler_version", "get_compiling_cuda_version"), ("info.cpp",)),
}
PYTORCH_SRC = Path("mmcv/ops/csrc/pytorch")
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
               "CPU StreamPETR stack calls (streampetr-dali's reduced op set). Build the full set "
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


@dataclass(frozen=True)
class Reduction:
    """What a reduced build compiles and what it registers as stubs."""

    compiled_ops: tuple[str, ...]  # `mmcv._ext` names with their real code
    stubbed_ops: tuple[str, ...]  # names that raise OpNotCompiledError
    units: tuple[str, ...]  # the .cpp files compiled, relative to mmcv/ops/csrc/pytorch


def kept_names() -> tuple[str, ...]:
    return tuple(name for names, _ in KEPT.values() for name in names)


def kept_units() -> tuple[str, ...]:
    return ("pybind.cpp", *(src for _, sources in KEPT.values() for src in sources))


def label() -> str:
    """A short key of the kept set, for the wheel cache folder: another set is another wheel."""
    text = repr(sorted((op, names, srcs) for op, (names, srcs) in KEPT.items())) + STUB_HELPER
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


def rewrite_pybind(text: str, keep: tuple[str, ...], where: str = str(PYBIND)) -> tuple[str, tuple[str, ...]]:
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
    helper = STUB_HELPER.replace("%HINT%", FULL_OPS_HINT)
    new = text[:start] + helper + MODULE_START + "\n" + "".join(lines) + "}\n"
    return new, tuple(stubbed)


def reduce_sources(src: Path) -> Reduction:
    """Turn an unpacked mmcv-full sdist at `src` into the reduced build: rewrite pybind.cpp and
    delete the sources of the ops left out (setup.py compiles whatever .cpp it finds)."""
    root = src / PYTORCH_SRC
    units = kept_units()
    absent = [u for u in units if not (root / u).is_file()]
    if absent:
        raise EnvBuildError(f"{root}: the reduced op set's sources {', '.join(absent)} are missing")
    pybind = src / PYBIND
    text, stubbed = rewrite_pybind(pybind.read_text(), kept_names(), str(pybind))
    pybind.write_text(text)
    for cpp in [*root.glob("*.cpp"), *root.glob("cpu/*.cpp")]:
        if str(cpp.relative_to(root)) not in units:
            cpp.unlink()
    return Reduction(compiled_ops=kept_names(), stubbed_ops=stubbed, units=units)
